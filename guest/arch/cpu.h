// Raw x86-64 instructions. Only the native pv backend and boot code use the
// privileged ones directly; everything else goes through pv_ops (pv/pv_ops.h).
#ifndef GUEST_ARCH_CPU_H_
#define GUEST_ARCH_CPU_H_

#include <stdint.h>

namespace guest::cpu {

inline constexpr uint64_t kRflagsIf = 1ull << 9;
inline constexpr uint64_t kCr0Ts = 1ull << 3;

inline void Outb(uint16_t port, uint8_t v) { asm volatile("outb %0, %1" ::"a"(v), "Nd"(port)); }
inline uint8_t Inb(uint16_t port) {
  uint8_t v;
  asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
  return v;
}
inline void Outw(uint16_t port, uint16_t v) { asm volatile("outw %0, %1" ::"a"(v), "Nd"(port)); }

// rdtsc, never rdtscp (docs/hosts.md: rdtscp fails in emulated ring 0).
inline uint64_t Rdtsc() {
  uint32_t lo, hi;
  asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

inline uint64_t SaveFlags() {
  uint64_t f;
  asm volatile("pushfq; popq %0" : "=r"(f)::"memory");
  return f;
}
inline void RestoreFlags(uint64_t f) { asm volatile("pushq %0; popfq" ::"r"(f) : "memory", "cc"); }
inline void Cli() { asm volatile("cli" ::: "memory"); }
inline void Sti() { asm volatile("sti" ::: "memory"); }
// sti's one-instruction shadow covers hlt, so a wakeup cannot slip between.
inline void SafeHalt() { asm volatile("sti; hlt" ::: "memory"); }

inline uint64_t ReadCr0() {
  uint64_t v;
  asm volatile("mov %%cr0, %0" : "=r"(v));
  return v;
}
inline void WriteCr0(uint64_t v) { asm volatile("mov %0, %%cr0" ::"r"(v) : "memory"); }
inline void Clts() { asm volatile("clts" ::: "memory"); }
inline uint64_t ReadCr2() {
  uint64_t v;
  asm volatile("mov %%cr2, %0" : "=r"(v));
  return v;
}
inline uint64_t ReadCr3() {
  uint64_t v;
  asm volatile("mov %%cr3, %0" : "=r"(v));
  return v;
}
inline void WriteCr3(uint64_t v) { asm volatile("mov %0, %%cr3" ::"r"(v) : "memory"); }
inline void Invlpg(uint64_t va) { asm volatile("invlpg (%0)" ::"r"(va) : "memory"); }

// fxsave/fxrstor, never xsave (docs/hosts.md). `area` is 512 bytes, 16-aligned.
inline void Fxsave(void* area) { asm volatile("fxsave64 (%0)" ::"r"(area) : "memory"); }
inline void Fxrstor(const void* area) { asm volatile("fxrstor64 (%0)" ::"r"(area) : "memory"); }

// Reload %fs or %gs from a selector (0 or a TLS selector). The descriptor
// must already be in the GDT with its accessed bit set.
inline void LoadFs(uint16_t fs) { asm volatile("mov %0, %%fs" ::"r"(fs) : "memory"); }
inline void LoadGs(uint16_t gs) { asm volatile("mov %0, %%gs" ::"r"(gs) : "memory"); }

inline void Pause() { asm volatile("pause"); }

}  // namespace guest::cpu

#endif  // GUEST_ARCH_CPU_H_
