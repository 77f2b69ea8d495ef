#include "kernel/percpu.h"

#include "arch/cpu.h"
#include "kernel/boot.h"
#include "kernel/panic.h"

extern "C" uint64_t pvh_gdt[];  // guest/arch/pvh.S: the PVH entry's own GDT

namespace guest {

constinit Cpu g_cpus[MVMM_MAX_CPUS];

namespace {

// Set by the first CPU to find a GDT base that is no CPU's, before it
// panics; the base it is reporting.
bool g_unknown_gdt = false;
uint64_t g_unknown_gdt_base = 0;

}  // namespace

// CurrentCpu's slow path. The panic it raises runs code that asks
// CurrentCpu again (Fatal's console line, the final report's Kc() and Hc(),
// the shutdown hypercall's count, any lock they take): on the panicking CPU
// those find the same base, and get 0 so that the report is written and the
// VM shut down instead of the panic recursing. The counts it reports are
// then filed as CPU 0's (there is no telling whose they are). Another CPU
// finding a base of no CPU's while that panic runs stops for good, and says
// nothing (one panic line per run); one finding that very base cannot be
// told apart and gets 0 as well.
uint32_t CpuOfOtherGdtBase(uint64_t base) {
  const uint64_t own = g_boot.under_minivmm ? 0 : reinterpret_cast<uint64_t>(pvh_gdt);
  const CpuOfGdt c = CpuOfGdtBase(base, own);
  if (c.known) return c.cpu;
  bool first = false;
  if (__atomic_compare_exchange_n(&g_unknown_gdt, &first, true, false, __ATOMIC_SEQ_CST,
                                  __ATOMIC_SEQ_CST)) {
    __atomic_store_n(&g_unknown_gdt_base, base, __ATOMIC_SEQ_CST);
    char storage[160];
    TextBuf msg(storage, sizeof(storage));
    msg.Str("CurrentCpu: GDT base 0x").Hex(base).Str(" is no CPU's (");
    if (own == 0) {
      msg.Str("CPU n's is at 0x")
          .Hex(MVMM_GDT_GPA)
          .Str(" + n*0x")
          .Hex(MVMM_GDT_STRIDE)
          .Str(", n < ")
          .Dec(MVMM_MAX_CPUS)
          .Char(')');
    } else {
      msg.Str("the PVH entry's is at 0x").Hex(own).Char(')');
    }
    Panic(msg.View());
  }
  if (__atomic_load_n(&g_unknown_gdt_base, __ATOMIC_SEQ_CST) == base) return 0;
  for (;;) {
    cpu::Cli();
    asm volatile("hlt");
  }
}

uint64_t ThisCpuGdt() { return g_boot.gdt_gpa + CurrentCpu() * MVMM_GDT_STRIDE; }

mvmm_tss* ThisCpuTss() {
  return reinterpret_cast<mvmm_tss*>(reinterpret_cast<uint64_t>(g_boot.tss) +
                                     CurrentCpu() * MVMM_TSS_STRIDE);
}

}  // namespace guest
