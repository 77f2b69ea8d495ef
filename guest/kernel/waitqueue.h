// Wait queues: where a task blocks until another task wakes it.
#ifndef GUEST_KERNEL_WAITQUEUE_H_
#define GUEST_KERNEL_WAITQUEUE_H_

#include "kernel/spinlock.h"

namespace guest {

struct Task;

// A FIFO of blocked tasks.
struct WaitQueue {
  Task* head = nullptr;
  Task* tail = nullptr;
};

// Blocks the current task on `wq`. Called with `lock` held and interrupts
// off; releases the lock while asleep and holds it again on return.
void SleepOn(WaitQueue* wq, SpinLock* lock);
// Makes every task on `wq` runnable. Interrupts must be off.
void WakeAll(WaitQueue* wq);

}  // namespace guest

#endif  // GUEST_KERNEL_WAITQUEUE_H_
