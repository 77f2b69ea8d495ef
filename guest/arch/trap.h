// The register frame built by arch/entry.S trap_common, lowest address first.
#ifndef GUEST_ARCH_TRAP_H_
#define GUEST_ARCH_TRAP_H_

#include <stdint.h>

namespace guest {

struct TrapFrame {
  uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
  uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
  uint64_t vector, error;
  // Pushed by the CPU (always, in 64-bit mode).
  uint64_t rip, cs, rflags, rsp, ss;

  bool FromUser() const { return (cs & 3) == 3; }
};
static_assert(sizeof(TrapFrame) == 22 * 8, "entry.S pushes 22 quadwords");

inline constexpr uint64_t kVectorDe = 0;
inline constexpr uint64_t kVectorBp = 3;
inline constexpr uint64_t kVectorUd = 6;
inline constexpr uint64_t kVectorNm = 7;
inline constexpr uint64_t kVectorGp = 13;
inline constexpr uint64_t kVectorPf = 14;
inline constexpr uint64_t kVectorSyscall = 0x80;

// Installs the IDT: exception stubs for 0-31, the timer at 0x20, IPIs at
// 0x21, and a DPL-3 gate at 0x80 for system calls.
void IdtInit();
// Loads the IDT IdtInit built on this CPU (a secondary CPU's: all share it).
void IdtLoad();

}  // namespace guest

extern "C" void TrapDispatch(guest::TrapFrame* frame);
extern "C" void trap_return();

#endif  // GUEST_ARCH_TRAP_H_
