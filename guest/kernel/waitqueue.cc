#include "kernel/waitqueue.h"

#include "kernel/counters.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"
#include "kernel/runqueue.h"
#include "kernel/sched.h"

namespace guest {

// Interrupts must be off. Caller holds `lock` (the lock protecting the
// condition it waits for; may be null) and no other spinlock, in particular
// not g_rq_lock. Sleeps: queues the current task on `wq`, releases `lock`
// and switches away (Schedule); once woken by WakeAll and scheduled again,
// retakes `lock` and returns with interrupts off. The caller rechecks its
// condition in a loop.
void SleepOn(WaitQueue* wq, SpinLock* lock) {
  Task* t = Current();
  GUEST_ASSERT(t->waiting_on == nullptr && !t->on_runq);
  t->state = TaskState::kBlocked;
  t->waiting_on = wq;
  t->wait_next = nullptr;
  if (wq->tail) {
    wq->tail->wait_next = t;
  } else {
    wq->head = t;
  }
  wq->tail = t;
  if (lock) lock->Unlock();
  Schedule();
  if (lock) lock->Lock();
}

// Interrupts must be off. Caller may hold the lock protecting `wq`'s
// condition, but not g_rq_lock: it takes g_rq_lock for each task it moves
// to the run queue. Never sleeps; the woken tasks run once the caller gives up
// the CPU.
void WakeAll(WaitQueue* wq) {
  GUEST_ASSERT(IrqsOff());
  while (Task* t = wq->head) {
    wq->head = t->wait_next;
    if (wq->head == nullptr) wq->tail = nullptr;
    t->waiting_on = nullptr;
    t->wait_next = nullptr;
    Count(&KernelCounters::wakeups);
    g_rq_lock.Lock();
    t->state = TaskState::kRunnable;
    Enqueue(t);  // on its CPU, which may be another one
    g_rq_lock.Unlock();
  }
}

}  // namespace guest
