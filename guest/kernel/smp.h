// Secondary CPUs and IPIs (docs/design.md "Several vCPUs", guest/README.md
// "Secondary CPUs"). Every CPU enters at _start; CPU 0 boots the kernel, each
// other CPU waits until CPU 0 has zeroed BSS and built the IDT, loads that
// IDT, counts itself up, registers its run-state area, enables interrupts
// and idles (ApIdleLoop in sched.h): it runs the tasks queued on it and
// otherwise blocks, and what another CPU asks of it it does in its IPI
// handler (vector MVMM_IPI_VECTOR). CPU 0 waits, reading memory only, until
// every other CPU is idle, so the workloads never run beside a CPU that is
// still coming up, and a workload that places no task on another CPU has
// CPU 0's exits of a one-CPU run.
//
// Requests go through a per-CPU mailbox: FLUSH (flush your TLB) and CALL
// (run a function with an argument and leave a result), each acknowledged
// by a counter the target increments when it has done it. Only CPU 0 sends
// requests. Each CPU's counters are written by that CPU only.
#ifndef GUEST_KERNEL_SMP_H_
#define GUEST_KERNEL_SMP_H_

#include <stdint.h>

#include "arch/trap.h"
#include "kernel/percpu.h"
#include "lib/format.h"
#include "minivmm_abi/boot.h"

namespace guest {

struct Task;

// On CPU 0, once BSS is zeroed and the IDT built: lets the other `nr_cpus - 1`
// CPUs run and waits until each is idle. False when one could not register
// its run-state area (it then idles without it).
bool SmpBoot(uint32_t nr_cpus);

// CPUs that came up, CPU 0 included.
uint32_t CpusUp();
// boot_info's nr_cpus (1 under the PVH entry).
uint32_t NrCpus();
// The CPU this code runs on: CurrentCpu() (kernel/percpu.h), from its GDT.
// Every CPU that came up, the calling one excepted: bit n = CPU n.
uint64_t OtherCpusMask();

// The IPI handler (vector MVMM_IPI_VECTOR), on the CPU that took it: first
// the run-state FLUSH flag (flush_tlb_others), then the mailbox's FLUSH and
// CALL requests.
void IpiInterrupt();

// What a CALL request runs on its target, in its IPI handler; the result is
// left for SmpCallResult.
using SmpCallFn = uint64_t (*)(uint64_t arg);

// CPU 0: asks every CPU in `mask` to run fn(arg) and waits until each has
// (the IPIs go through the send_ipi pv op, so its variant applies).
void SmpCallFunctionMany(uint64_t mask, SmpCallFn fn, uint64_t arg);
// The same in two halves, so that CPU 0 can work beside the others: Start
// posts the CALLs and sends the IPIs, Wait waits until each target has run
// fn. No other request to `mask` in between.
void SmpCallFunctionStart(uint64_t mask, SmpCallFn fn, uint64_t arg);
void SmpCallWait(uint64_t mask);
// What CPU `cpu` returned from the last CALL it ran.
uint64_t SmpCallResult(uint32_t cpu);
// CPU 0: the naive flush_tlb: a FLUSH request in each target's mailbox, an
// IPI to each (send_ipi pv op), then waits until each has flushed.
void SmpFlushOthersByIpi(uint64_t mask);
// CPU 0: waits, reading run-state memory only, until every CPU in `mask` is
// blocked (MVMM_RUNSTATE_BLOCKED): idle in its loop again.
void SmpWaitBlocked(uint64_t mask);

// Takes this CPU's run-state FLUSH flag (set by another CPU's
// flush_tlb_others) and, if it was set, flushes the TLB.
void TakeFlushFlag();

// A secondary CPU's idle block: one sched_op(block) unless a task is queued
// at *head (this CPU's run queue), checked in the same restartable window
// (RestartIdleWindow). Counted as idle_blocks and a sched_op exit when it
// blocked. Interrupts on.
void IdleBlock(Task* const* head);
// Called for every interrupt taken in kernel mode: if it came inside
// IdleBlock's window before the block, resumes the window at its check
// (counted as idle_restarts). MIPS Linux's r4k_wait rollback.
void RestartIdleWindow(TrapFrame* f);

// Appends kernel.cpus_up and, for each secondary CPU n, its own counts:
// smp.cpu<n>.bringup_hypercalls (vcpu_op and set_if), .ipi_flushes (FLUSH
// requests done), .flag_flushes (run-state FLUSH flags taken), .ipi_calls
// (CALL requests done), its kernel counters (counters.h: .idle_blocks,
// .ipis and .cr3_writes always, the others when not zero), its spinlock
// counts (.lock_*: AppendLockCounts; CPU 0's as kernel.lock_*) and
// .hc_exits.<name> for every hypercall it made. Read while the secondary
// CPUs are idle.
void AppendSmpReport(TextBuf* out);

}  // namespace guest

// A secondary CPU's entry from _start, on its VMM stack.
extern "C" [[noreturn]] void ApMain(const mvmm_boot_info* bi, uint64_t cpu);

#endif  // GUEST_KERNEL_SMP_H_
