#include "kernel/percpu.h"

#include "kernel/boot.h"

namespace guest {

constinit Cpu g_cpus[MVMM_MAX_CPUS];

uint64_t ThisCpuGdt() { return g_boot.gdt_gpa + CurrentCpu() * MVMM_GDT_STRIDE; }

mvmm_tss* ThisCpuTss() {
  return reinterpret_cast<mvmm_tss*>(reinterpret_cast<uint64_t>(g_boot.tss) +
                                     CurrentCpu() * MVMM_TSS_STRIDE);
}

}  // namespace guest
