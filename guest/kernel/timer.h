// The timer interrupt and preemption: the tick only marks the current task;
// the switch happens on its way back to ring 3. CPU 0's tick is the VMM's
// periodic timer (--timer-hz); another CPU runs a tick of its own, at the
// same rate, only while preemption is on and it has run a ring-3 task
// (vcpu_op set_periodic_timer, Xen's per-vCPU periodic timer).
#ifndef GUEST_KERNEL_TIMER_H_
#define GUEST_KERNEL_TIMER_H_

#include "arch/trap.h"

namespace guest {

struct Task;

// Timer interrupt (vector 0x20): counts it and, with preemption on, marks
// the current task for rescheduling.
void TimerInterrupt(TrapFrame* f);
// The preemption point on the way back to ring 3: reschedules if marked.
void ReturnToUserWork();
// Turns preemption of ring-3 tasks by the timer on or off (CPU 0; off
// waits until every other CPU has stopped its own tick).
void SetPreemption(bool on);
// Context switch into `next` on a secondary CPU: starts this CPU's tick if
// preemption is on, `next` is a ring-3 task and the tick is not running
// (one vcpu_op).
void TickSwitchIn(const Task* next);
// A secondary CPU about to block in its idle loop: stops its tick once
// preemption is off (one vcpu_op), so that it sleeps for good.
void TickIdle();

}  // namespace guest

#endif  // GUEST_KERNEL_TIMER_H_
