#include "kernel/runqueue.h"

#include "kernel/panic.h"
#include "kernel/percpu.h"
#include "kernel/sched.h"
#include "pv/pv_ops.h"

namespace guest {

SpinLock g_rq_lock;

// Caller holds g_rq_lock (so interrupts are off). `t` must be on neither
// a run queue nor a wait queue. Never sleeps.
void RunqPush(Task* t) {
  GUEST_ASSERT(!t->on_runq && t->waiting_on == nullptr);
  Cpu& c = g_cpus[t->cpu];
  t->on_runq = true;
  t->run_next = nullptr;
  if (c.runq_tail) {
    c.runq_tail->run_next = t;
  } else {
    // The head is what an idle secondary CPU checks before it blocks.
    __atomic_store_n(&c.runq_head, t, __ATOMIC_RELEASE);
  }
  c.runq_tail = t;
}

// Caller holds g_rq_lock (so interrupts are off). Never sleeps.
Task* RunqPop() {
  Cpu& c = ThisCpu();
  Task* t = c.runq_head;
  if (t == nullptr) return nullptr;
  c.runq_head = t->run_next;
  if (c.runq_head == nullptr) c.runq_tail = nullptr;
  t->on_runq = false;
  return t;
}

// Interrupts must be off (then a task queued here by another CPU after
// the answer also sends an IPI, which stays pending and ends the idle
// block); g_rq_lock need not be held (the idle loop asks without it).
// Never sleeps.
bool RunqEmpty() { return __atomic_load_n(&ThisCpu().runq_head, __ATOMIC_ACQUIRE) == nullptr; }

// Caller holds g_rq_lock. May issue a send_ipi hypercall; never sleeps.
void Enqueue(Task* t) {
  RunqPush(t);
  if (t->cpu == CurrentCpu()) return;
  Count(&KernelCounters::remote_enqueues);
  const Cpu& c = g_cpus[t->cpu];
  if (c.current == c.idle) {
    Count(&KernelCounters::resched_ipis);
    SendIpiMask(1ull << t->cpu);
  }
}

}  // namespace guest
