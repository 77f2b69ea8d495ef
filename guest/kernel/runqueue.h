// The run queues: one FIFO of runnable tasks per CPU (percpu.h), not
// counting the running task and the idle task. Internal to the scheduler
// (sched.cc, waitqueue.cc).
#ifndef GUEST_KERNEL_RUNQUEUE_H_
#define GUEST_KERNEL_RUNQUEUE_H_

#include "kernel/spinlock.h"

namespace guest {

struct Task;

// Protects every run queue, every CPU's `current` and every task's
// state/run-queue fields (one lock for all CPUs, as Linux 2.4's runqueue
// lock: a cross-CPU wakeup takes nothing else).
extern SpinLock g_rq_lock;

// Appends `t`, which is on no queue, to its CPU's (t->cpu) queue. Caller
// holds g_rq_lock.
void RunqPush(Task* t);
// Removes and returns the first task of this CPU's queue, or nullptr.
// Caller holds g_rq_lock.
Task* RunqPop();
// True when no task waits to run on this CPU. Interrupts must be off.
bool RunqEmpty();
// RunqPush, then makes t's CPU look at its queue: when that CPU is another
// one (counted as remote_enqueues), an IPI (send_ipi pv op, counted as
// resched_ipis) if it is idle. Caller holds g_rq_lock.
void Enqueue(Task* t);

}  // namespace guest

#endif  // GUEST_KERNEL_RUNQUEUE_H_
