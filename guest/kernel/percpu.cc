#include "kernel/percpu.h"

#include "kernel/boot.h"

namespace guest {

constinit Cpu g_cpus[MVMM_MAX_CPUS];

// Any context. `sgdt` does not exit (and is not privileged). Outside
// minivmm (the PVH entry) the kernel runs its own GDT on one CPU.
uint32_t CurrentCpu() {
  struct __attribute__((packed)) {
    uint16_t limit;
    uint64_t base;
  } gdtr;
  asm volatile("sgdt %0" : "=m"(gdtr));
  const uint64_t off = gdtr.base - MVMM_GDT_GPA;
  if (gdtr.base < MVMM_GDT_GPA || off >= MVMM_MAX_CPUS * MVMM_GDT_STRIDE) return 0;
  return static_cast<uint32_t>(off / MVMM_GDT_STRIDE);
}

uint64_t ThisCpuGdt() { return g_boot.gdt_gpa + CurrentCpu() * MVMM_GDT_STRIDE; }

mvmm_tss* ThisCpuTss() {
  return reinterpret_cast<mvmm_tss*>(reinterpret_cast<uint64_t>(g_boot.tss) +
                                     CurrentCpu() * MVMM_TSS_STRIDE);
}

}  // namespace guest
