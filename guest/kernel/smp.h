// Secondary CPUs (docs/design.md "Several vCPUs"). Every CPU enters at
// _start; CPU 0 boots the kernel and runs everything, each other CPU waits
// until CPU 0 has zeroed BSS and built the IDT, loads that IDT, counts itself
// up, registers its run-state area and idles in sched_op(block) until the VM
// stops. CPU 0 waits, reading memory only, until every other CPU is idle, so
// the workloads never run beside a CPU that is still coming up and CPU 0's
// exits are those of a one-CPU run.
#ifndef GUEST_KERNEL_SMP_H_
#define GUEST_KERNEL_SMP_H_

#include <stdint.h>

#include "lib/format.h"
#include "minivmm_abi/boot.h"

namespace guest {

// On CPU 0, once BSS is zeroed and the IDT built: lets the other `nr_cpus - 1`
// CPUs run and waits until each is idle. False when one could not register
// its run-state area (it then idles without it).
bool SmpBoot(uint32_t nr_cpus);

// CPUs that came up, CPU 0 included.
uint32_t CpusUp();

// Appends kernel.cpus_up and, for each secondary CPU n, the exits it took:
// smp.cpu<n>.bringup_hypercalls (vcpu_op) and smp.cpu<n>.idle_blocks
// (sched_op(block)). Final once SmpBoot returned: an idle CPU never runs again.
void AppendSmpReport(TextBuf* out);

}  // namespace guest

// A secondary CPU's entry from _start, on its VMM stack.
extern "C" [[noreturn]] void ApMain(const mvmm_boot_info* bi, uint64_t cpu);

#endif  // GUEST_KERNEL_SMP_H_
