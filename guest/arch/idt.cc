#include "arch/trap.h"
#include "minivmm_abi/boot.h"

extern "C" const uint64_t trap_stub_table[34];
extern "C" const uint64_t trap_stub_syscall;

namespace guest {
namespace {

struct IdtGate {
  uint16_t offset_low;
  uint16_t selector;
  uint8_t ist;
  uint8_t type_attr;
  uint16_t offset_mid;
  uint32_t offset_high;
  uint32_t reserved;
};
static_assert(sizeof(IdtGate) == 16);

struct __attribute__((packed)) IdtPointer {
  uint16_t limit;
  uint64_t base;
};

// 0x81 entries: vectors 0-33 and the system-call gate; the rest are not
// present, so a stray vector becomes a #GP that names it in its error code.
alignas(16) IdtGate g_idt[0x81];

void SetGate(int vector, uint64_t handler, int dpl) {
  IdtGate& g = g_idt[vector];
  g.offset_low = static_cast<uint16_t>(handler);
  g.selector = MVMM_SEL_KERNEL_CS;
  g.ist = 0;
  // Interrupt gate (type 0xE): IF is cleared on entry, so every handler
  // starts with interrupts off whatever the backend.
  g.type_attr = static_cast<uint8_t>(0x80 | (dpl << 5) | 0xE);
  g.offset_mid = static_cast<uint16_t>(handler >> 16);
  g.offset_high = static_cast<uint32_t>(handler >> 32);
  g.reserved = 0;
}

}  // namespace

void IdtInit() {
  for (int v = 0; v <= 33; ++v) SetGate(v, trap_stub_table[v], v == kVectorBp ? 3 : 0);
  SetGate(kVectorSyscall, trap_stub_syscall, 3);
  IdtLoad();
}

void IdtLoad() {
  IdtPointer ptr = {sizeof(g_idt) - 1, reinterpret_cast<uint64_t>(g_idt)};
  asm volatile("lidt %0" ::"m"(ptr));
}

}  // namespace guest
