#include "kernel/timer.h"

#include "kernel/counters.h"
#include "kernel/percpu.h"
#include "kernel/sched.h"

namespace guest {
namespace {

bool g_preempt = false;

}  // namespace

// Interrupt context: interrupts off, called by TrapDispatch. Takes no lock
// and never sleeps (it only sets a flag; kernel code is not preempted).
void TimerInterrupt(TrapFrame*) {
  ++Kc().timer_irqs;
  if (g_preempt && !IsIdle(Current())) ThisCpu().need_resched = true;
}

// Called by TrapDispatch on the way back to ring 3: interrupts off, no lock
// held. May switch away (Schedule) and return only when this task is picked
// again.
void ReturnToUserWork() {
  bool& need_resched = ThisCpu().need_resched;
  if (!need_resched) return;
  need_resched = false;
  ++Kc().preemptions;
  Schedule();
}

// Task context, no lock needed (a plain flag the timer reads). Never sleeps.
void SetPreemption(bool on) { g_preempt = on; }

}  // namespace guest
