#include "kernel/runqueue.h"

#include "kernel/panic.h"
#include "kernel/sched.h"

namespace guest {

SpinLock g_rq_lock;

namespace {

Task* g_runq_head = nullptr;
Task* g_runq_tail = nullptr;

}  // namespace

// Caller holds g_rq_lock (so interrupts are off). `t` must be on neither
// the run queue nor a wait queue. Never sleeps.
void RunqPush(Task* t) {
  GUEST_ASSERT(!t->on_runq && t->waiting_on == nullptr);
  t->on_runq = true;
  t->run_next = nullptr;
  if (g_runq_tail) {
    g_runq_tail->run_next = t;
  } else {
    g_runq_head = t;
  }
  g_runq_tail = t;
}

// Caller holds g_rq_lock (so interrupts are off). Never sleeps.
Task* RunqPop() {
  Task* t = g_runq_head;
  if (t == nullptr) return nullptr;
  g_runq_head = t->run_next;
  if (g_runq_head == nullptr) g_runq_tail = nullptr;
  t->on_runq = false;
  return t;
}

// Interrupts must be off (one vCPU: then nothing else can change the queue
// before the caller acts on the answer); g_rq_lock need not be held (the
// idle loop asks without it). Never sleeps.
bool RunqEmpty() { return g_runq_head == nullptr; }

}  // namespace guest
