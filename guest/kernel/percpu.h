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
#include "lib/cpu_of_gdt.h"
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

// This CPU's GDTR base (`sgdt`: no exit, not privileged; each instruction
// of ring 0 is emulated on some hosts: docs/hosts.md). Any context.
inline uint64_t GdtBase() {
  struct __attribute__((packed)) {
    uint16_t limit;
    uint64_t base;
  } gdtr;
  asm volatile("sgdt %0" : "=m"(gdtr));
  return gdtr.base;
}

// The rest of CurrentCpu, out of line (percpu.cc): a base that is no
// minivmm CPU's. Answers 0 for the kernel's own PVH GDT outside minivmm;
// for any other base it panics, naming the base ("CurrentCpu: GDT base 0x...
// is no CPU's"). While that panic reports, the lookup answers 0 for that
// same base (its report and shutdown count on some CPU), and stops any
// other CPU that finds a base of no CPU's.
uint32_t CpuOfOtherGdtBase(uint64_t base);

// The CPU this code runs on, from its GDTR base (lib/cpu_of_gdt.h): CPU n's
// is MVMM_CPU_GDT_GPA(n); outside minivmm (the PVH entry) the kernel runs
// its own GDT on one CPU, 0. Any context, no exit. Inline, since it is on
// every counted path: the fast path is sgdt, a subtract, a rotate and one
// compare-and-branch; anything else (the PVH GDT, or a base that is no
// CPU's: a panic, never CPU 0) goes out of line.
inline uint32_t CurrentCpu() {
  const uint64_t base = GdtBase();
  const uint64_t n = MinivmmCpuOfGdtBase(base);
  if (__builtin_expect(n < MVMM_MAX_CPUS, 1)) return static_cast<uint32_t>(n);
  return CpuOfOtherGdtBase(base);
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
// (MVMM_CPU_GDT_GPA, MVMM_CPU_TSS_GPA); the PVH GDT and TSS outside minivmm.
// From CurrentCpu, so a GDT base that is no CPU's panics here too.
uint64_t ThisCpuGdt();
mvmm_tss* ThisCpuTss();

}  // namespace guest

#endif  // GUEST_KERNEL_PERCPU_H_
