// Per-CPU kernel state (Linux's per_cpu area): the running and idle tasks,
// the run queue, the scheduler's hand-over slots and the event counters.
// A CPU finds its own entry from its GDT: minivmm gives CPU n the GDT at
// MVMM_CPU_GDT_GPA(n), so `sgdt` names the CPU on any stack and in any
// context (a task's kernel stack says nothing about where the task runs).
#ifndef GUEST_KERNEL_PERCPU_H_
#define GUEST_KERNEL_PERCPU_H_

#include <stdint.h>

#include "kernel/counters.h"
#include "kernel/hypercall.h"
#include "minivmm_abi/boot.h"

namespace guest {

struct Task;

struct Cpu {
  uint32_t id;
  Task* current;  // the task running on this CPU
  Task* idle;     // its idle task: runs when its run queue is empty
  // Its run queue: runnable tasks placed on this CPU, not counting the
  // running one and the idle task. Under g_rq_lock (runqueue.h).
  Task* runq_head;
  Task* runq_tail;
  // A task leaving this CPU for another one (MigrateCurrent): set by
  // Schedule just before it switches away, queued on its new CPU by
  // FinishSwitch once its context is saved.
  Task* leaving;
  // Set by the timer tick on this CPU: switch on the way back to ring 3.
  bool need_resched;
  // Ticks that interrupted the current task's own (ring-3) code since it
  // was switched in (timer.cc: its time slice). Reset by Schedule.
  uint32_t user_ticks;
  // This CPU's counts, written by this CPU only (read by CPU 0 for the
  // report while this CPU is idle).
  KernelCounters kc;
  HypercallCounts hc;
};

extern Cpu g_cpus[MVMM_MAX_CPUS];

// The CPU this code runs on (0 outside minivmm, where there is one). Any
// context. `sgdt` does not exit (and is not privileged); inline, since it is
// on every counted path (each instruction of ring 0 is emulated on some
// hosts: docs/hosts.md). Outside minivmm (the PVH entry) the kernel runs its
// own GDT on one CPU.
inline uint32_t CurrentCpu() {
  struct __attribute__((packed)) {
    uint16_t limit;
    uint64_t base;
  } gdtr;
  asm volatile("sgdt %0" : "=m"(gdtr));
  const uint64_t off = gdtr.base - MVMM_GDT_GPA;
  if (gdtr.base < MVMM_GDT_GPA || off >= MVMM_MAX_CPUS * MVMM_GDT_STRIDE) return 0;
  return static_cast<uint32_t>(off / MVMM_GDT_STRIDE);
}
inline Cpu& ThisCpu() { return g_cpus[CurrentCpu()]; }
inline KernelCounters& Kc() { return ThisCpu().kc; }
inline HypercallCounts& Hc() { return ThisCpu().hc; }

// The kernel's event counting, compiled in or out. The kernel is built
// twice from the same sources: minivmm-guest.elf counts every event and
// every hypercall (what the tests compare with the VMM's counts), and
// minivmm-guest-uncounted.elf (GUEST_COUNTERS=0), which `minivmm bench`
// times, compiles all of it out, so that no timed path runs the guest's own
// bookkeeping (Linux's hot paths have none). The uncounted kernel reports
// kernel.counters=0 and no counter at all ("not measured", not zero);
// check failures are counted by both.
#ifndef GUEST_COUNTERS
#define GUEST_COUNTERS 1
#endif
inline constexpr bool kCounters = GUEST_COUNTERS != 0;

// Adds `n` to this CPU's `counter` (&KernelCounters::name); nothing at all,
// not even the CPU lookup, in the uncounted kernel.
inline void Count(uint64_t KernelCounters::*counter, uint64_t n = 1) {
  if constexpr (kCounters) ThisCpu().kc.*counter += n;
}
inline Task* Current() { return ThisCpu().current; }

// This CPU's GDT (its TLS slots) and TSS: CPU n's are the n-th of the VMM's
// (MVMM_CPU_GDT_GPA, MVMM_CPU_TSS_GPA).
uint64_t ThisCpuGdt();
mvmm_tss* ThisCpuTss();

}  // namespace guest

#endif  // GUEST_KERNEL_PERCPU_H_
