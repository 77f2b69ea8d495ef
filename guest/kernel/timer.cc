#include "kernel/timer.h"

#include "kernel/counters.h"
#include "kernel/sched.h"

namespace guest {
namespace {

bool g_preempt = false;
bool g_need_resched = false;

}  // namespace

// Interrupt context: interrupts off, called by TrapDispatch. Takes no lock
// and never sleeps (it only sets a flag; kernel code is not preempted).
void TimerInterrupt(TrapFrame*) {
  ++g_kc.timer_irqs;
  if (g_preempt && !IsIdle(g_current)) g_need_resched = true;
}

// Called by TrapDispatch on the way back to ring 3: interrupts off, no lock
// held. May switch away (Schedule) and return only when this task is picked
// again.
void ReturnToUserWork() {
  if (!g_need_resched) return;
  g_need_resched = false;
  ++g_kc.preemptions;
  Schedule();
}

// Task context, no lock needed (a plain flag the timer reads). Never sleeps.
void SetPreemption(bool on) { g_preempt = on; }

}  // namespace guest
