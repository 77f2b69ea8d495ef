// The run queue: a FIFO of runnable tasks, not counting the running task
// and the idle task. Internal to the scheduler (sched.cc, waitqueue.cc).
#ifndef GUEST_KERNEL_RUNQUEUE_H_
#define GUEST_KERNEL_RUNQUEUE_H_

#include "kernel/spinlock.h"

namespace guest {

struct Task;

// Protects the run queue and every task's state/run-queue fields.
extern SpinLock g_rq_lock;

// Appends `t`, which is on no queue. Caller holds g_rq_lock.
void RunqPush(Task* t);
// Removes and returns the first task, or nullptr. Caller holds g_rq_lock.
Task* RunqPop();
// True when no task is waiting to run. Interrupts must be off.
bool RunqEmpty();

}  // namespace guest

#endif  // GUEST_KERNEL_RUNQUEUE_H_
