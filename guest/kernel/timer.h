// The timer interrupt and preemption: the tick only marks the current task;
// the switch happens on its way back to ring 3.
#ifndef GUEST_KERNEL_TIMER_H_
#define GUEST_KERNEL_TIMER_H_

#include "arch/trap.h"

namespace guest {

// Timer interrupt (vector 0x20): counts it and, with preemption on, marks
// the current task for rescheduling.
void TimerInterrupt(TrapFrame* f);
// The preemption point on the way back to ring 3: reschedules if marked.
void ReturnToUserWork();
// Turns preemption of ring-3 tasks by the timer on or off.
void SetPreemption(bool on);

}  // namespace guest

#endif  // GUEST_KERNEL_TIMER_H_
