#include "kernel/timer.h"

#include "arch/cpu.h"
#include "arch/trap.h"
#include "kernel/boot.h"
#include "kernel/counters.h"
#include "kernel/hypercall.h"
#include "kernel/percpu.h"
#include "kernel/sched.h"
#include "kernel/smp.h"

namespace guest {
namespace {

bool g_preempt = false;

// A task is preempted at the second tick that interrupts its own ring-3
// code since it was switched in, so it always runs its own code for about a
// tick period. Preempting at the first tick would livelock where a switch
// takes longer than a tick (on kvm_pvm ring 0 is emulated: a switch costs
// several periods at 1000 Hz): the tick pending when a task first reaches
// ring 3 would switch it away before its first instruction, and two
// runnable tasks would pass the CPU back and forth without progress.
constexpr uint32_t kSliceUserTicks = 2;
bool g_tick_running[MVMM_MAX_CPUS];  // a secondary CPU's own tick; its own

}  // namespace

// Interrupt context: interrupts off, called by TrapDispatch. Takes no lock
// and never sleeps (it only sets a flag; kernel code is not preempted).
void TimerInterrupt(TrapFrame* frame) {
  Count(&KernelCounters::timer_irqs);
  if (!__atomic_load_n(&g_preempt, __ATOMIC_RELAXED) || IsIdle(Current()) || !frame->FromUser())
    return;
  Cpu& me = ThisCpu();
  if (++me.user_ticks >= kSliceUserTicks) me.need_resched = true;
}

// Called by TrapDispatch on the way back to ring 3: interrupts off, no lock
// held. May switch away (Schedule) and return only when this task is picked
// again.
void ReturnToUserWork() {
  bool& need_resched = ThisCpu().need_resched;
  if (!need_resched) return;
  need_resched = false;
  Count(&KernelCounters::preemptions);
  Schedule();
}

// Task context, no lock needed (a plain flag the timer reads). Never sleeps.
// Task context on CPU 0, no lock held. Turning preemption off waits,
// reading memory only, until every other CPU has stopped its tick (it does
// at its next idle pass, at most one tick away), so that no timer interrupt
// reaches a CPU after the workload: its counts are final.
void SetPreemption(bool on) {
  __atomic_store_n(&g_preempt, on, __ATOMIC_RELAXED);
  if (on) return;
  for (uint32_t cpu = 1; cpu < NrCpus(); ++cpu) {
    while (__atomic_load_n(&g_tick_running[cpu], __ATOMIC_ACQUIRE)) cpu::Pause();
  }
}

// A secondary CPU, in its context switch (g_rq_lock held, interrupts off).
// One hypercall when it starts the tick; never sleeps.
void TickSwitchIn(const Task* next) {
  const uint32_t cpu = CurrentCpu();
  if (cpu == 0 || !next->user || g_boot.timer_hz == 0 ||
      __atomic_load_n(&g_tick_running[cpu], __ATOMIC_RELAXED))
    return;
  if (!__atomic_load_n(&g_preempt, __ATOMIC_RELAXED)) return;
  __atomic_store_n(&g_tick_running[cpu], true, __ATOMIC_RELAXED);
  Count(&KernelCounters::tick_starts);
  // CPU 0's rate, but no faster than the shortest period the VMM allows.
  uint64_t period = 1'000'000'000ull / g_boot.timer_hz;
  if (period < MVMM_PERIODIC_TIMER_MIN_NS) period = MVMM_PERIODIC_TIMER_MIN_NS;
  HypercallOrDie(MVMM_HC_vcpu_op, MVMM_VCPUOP_SET_PERIODIC_TIMER, cpu, period);
}

// A secondary CPU's idle loop, interrupts on, no lock held. One hypercall
// when it stops the tick; never sleeps.
void TickIdle() {
  const uint32_t cpu = CurrentCpu();
  if (!__atomic_load_n(&g_tick_running[cpu], __ATOMIC_RELAXED) ||
      __atomic_load_n(&g_preempt, __ATOMIC_RELAXED))
    return;
  Count(&KernelCounters::tick_stops);
  HypercallOrDie(MVMM_HC_vcpu_op, MVMM_VCPUOP_STOP_PERIODIC_TIMER, cpu, 0);
  // A tick raised before the stop was taken right after the hypercall.
  __atomic_store_n(&g_tick_running[cpu], false, __ATOMIC_RELEASE);
}

}  // namespace guest
