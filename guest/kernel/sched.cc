#include "kernel/sched.h"

#include "arch/cpu.h"
#include "kernel/boot.h"
#include "kernel/counters.h"
#include "kernel/mem.h"
#include "kernel/panic.h"
#include "kernel/switch.h"
#include "minivmm_abi/boot.h"
#include "pv/pv_ops.h"

extern "C" void task_entry();
extern "C" uint64_t boot_stack_bottom[];

namespace guest {

Task* g_current = nullptr;
SpinLock g_rq_lock;

namespace {

constexpr uint64_t kStackGuard = 0x57ac6c0ffee5afe5ull;
constexpr uint64_t kKernelStackPages = 2;

Task* g_runq_head = nullptr;
Task* g_runq_tail = nullptr;
Task* g_idle = nullptr;
uint64_t g_next_pid = 0;
bool g_preempt = false;
bool g_need_resched = false;

bool IrqsOff() { return (ArchSaveFlags() & cpu::kRflagsIf) == 0; }

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

Task* RunqPop() {
  Task* t = g_runq_head;
  if (t == nullptr) return nullptr;
  g_runq_head = t->run_next;
  if (g_runq_head == nullptr) g_runq_tail = nullptr;
  t->on_runq = false;
  return t;
}

Task* NewTask(const char* name, bool user) {
  Task* t = static_cast<Task*>(AllocPages(1));
  static_assert(sizeof(Task) <= kPageSize);
  t->pid = g_next_pid++;
  t->name = name;
  t->user = user;
  t->state = TaskState::kRunnable;
  // Default x87/SSE state (FCW 0x37f, MXCSR 0x1f80): written as bytes so a
  // task's first fxrstor never needs fninit, which is x87 arithmetic-class.
  t->fxsave[0] = 0x7f;
  t->fxsave[1] = 0x03;
  t->fxsave[24] = 0x80;
  t->fxsave[25] = 0x1f;
  return t;
}

// Kernel stack: [guard][ ... stack ... ] top. Returns the top.
uint64_t NewKernelStack(Task* t) {
  uint8_t* base = static_cast<uint8_t*>(AllocPages(kKernelStackPages));
  t->kstack_guard = reinterpret_cast<uint64_t*>(base);
  *t->kstack_guard = kStackGuard;
  t->kstack_top = reinterpret_cast<uint64_t>(base) + kKernelStackPages * kPageSize;
  return t->kstack_top;
}

// The frame SwitchStacks pops for a task that has never run:
// r15 r14 r13 r12 rbx rbp, then the return address task_entry.
uint64_t* PushSwitchFrame(uint64_t* sp, uint64_t fn, uint64_t arg, bool user) {
  *--sp = reinterpret_cast<uint64_t>(task_entry);
  *--sp = 0;             // rbp
  *--sp = user ? 1 : 0;  // rbx
  *--sp = fn;            // r12
  *--sp = arg;           // r13
  *--sp = 0;             // r14
  *--sp = 0;             // r15
  return sp;
}

void IdleLoop(uint64_t) {
  for (;;) {
    ArchIrqDisable();
    if (g_runq_head == nullptr) {
      // Nothing can ever wake a task without an interrupt source.
      if (g_boot.timer_hz == 0) Panic("deadlock: every task is blocked and the timer is off");
      ++g_kc.idle_blocks;
      pv_ops.safe_halt();  // returns with IF=1 after the interrupt ran
    } else {
      ArchIrqEnable();
    }
    Schedule();
  }
}

}  // namespace

uint64_t SpinLock::LockIrqSave() {
  uint64_t f = ArchLocalIrqSave();
  Lock();
  return f;
}

void SpinLock::UnlockIrqRestore(uint64_t flags) {
  Unlock();
  ArchIrqRestore(flags);
}

void SpinLock::Lock() {
  GUEST_ASSERT(IrqsOff());  // a lock taken with IF set could be re-entered by an interrupt
  GUEST_ASSERT(!held_);     // one vCPU: a held lock here is a self-deadlock
  held_ = true;
}

void SpinLock::Unlock() {
  GUEST_ASSERT(held_);
  GUEST_ASSERT(IrqsOff());  // the lock was held with IF set
  held_ = false;
}

void SchedInit() {
  Task* init = NewTask("init", false);
  init->state = TaskState::kRunning;
  init->kstack_guard = boot_stack_bottom;
  *init->kstack_guard = kStackGuard;
  init->kstack_top = reinterpret_cast<uint64_t>(boot_stack_bottom) + 16384;
  g_current = init;
  // Never started: the idle task is never on the run queue; Schedule()
  // picks it when the queue is empty.
  g_idle = CreateKernelThread("idle", IdleLoop, 0);
}

Task* CreateKernelThread(const char* name, void (*fn)(uint64_t), uint64_t arg) {
  Task* t = NewTask(name, false);
  uint64_t* sp = reinterpret_cast<uint64_t*>(NewKernelStack(t));
  t->saved_rsp =
      reinterpret_cast<uint64_t>(PushSwitchFrame(sp, reinterpret_cast<uint64_t>(fn), arg, false));
  return t;
}

Task* CreateUserTask(const char* name, uint64_t entry, uint64_t arg, uint64_t user_stack_top) {
  Task* t = NewTask(name, true);
  uint64_t top = NewKernelStack(t);
  TrapFrame* f = reinterpret_cast<TrapFrame*>(top - sizeof(TrapFrame));
  f->rip = entry;
  f->cs = MVMM_SEL_USER_CS;
  f->rflags = 0x202;  // IF=1 once in ring 3
  // Entry looks like a call: RSP = 8 mod 16 with a (never used) return slot.
  f->rsp = (user_stack_top & ~15ull) - 8;
  f->ss = MVMM_SEL_USER_DS;
  f->rdi = arg;
  t->saved_rsp =
      reinterpret_cast<uint64_t>(PushSwitchFrame(reinterpret_cast<uint64_t*>(f), 0, 0, true));
  return t;
}

void StartTask(Task* t) {
  uint64_t f = g_rq_lock.LockIrqSave();
  RunqPush(t);
  g_rq_lock.UnlockIrqRestore(f);
}

void Schedule() {
  uint64_t flags = g_rq_lock.LockIrqSave();
  Task* prev = g_current;
  if (prev->state == TaskState::kRunning && prev != g_idle) {
    prev->state = TaskState::kRunnable;
    RunqPush(prev);
  }
  Task* next = RunqPop();
  if (next == nullptr) next = g_idle;
  if (next != prev) {
    next->state = TaskState::kRunning;
    ContextSwitch(prev, next);
    // Resumed: `prev` is running again; g_current == prev.
  } else {
    prev->state = TaskState::kRunning;
  }
  g_rq_lock.UnlockIrqRestore(flags);
}

void Yield() { Schedule(); }

void SleepOn(WaitQueue* wq, SpinLock* lock) {
  Task* t = g_current;
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

void WakeAll(WaitQueue* wq) {
  GUEST_ASSERT(IrqsOff());
  while (Task* t = wq->head) {
    wq->head = t->wait_next;
    if (wq->head == nullptr) wq->tail = nullptr;
    t->waiting_on = nullptr;
    t->wait_next = nullptr;
    ++g_kc.wakeups;
    g_rq_lock.Lock();
    t->state = TaskState::kRunnable;
    RunqPush(t);
    g_rq_lock.Unlock();
  }
}

void JoinAdd(Join* join, Task* t) {
  t->join = join;
  ++join->live;
}

void JoinWait(Join* join) {
  uint64_t f = ArchLocalIrqSave();
  while (join->live != 0) SleepOn(&join->waiter, nullptr);
  ArchIrqRestore(f);
}

uint64_t RunAndWait(Task* t) {
  Join join;
  JoinAdd(&join, t);
  StartTask(t);
  JoinWait(&join);
  return t->exit_value;
}

void ExitCurrent(uint64_t value) {
  ArchIrqDisable();
  Task* t = g_current;
  t->exit_value = value;
  if (t->join != nullptr && --t->join->live == 0) WakeAll(&t->join->waiter);
  t->state = TaskState::kDead;
  Schedule();
  Panic("a dead task was scheduled");
}

void TimerInterrupt(TrapFrame*) {
  ++g_kc.timer_irqs;
  if (g_preempt && g_current != g_idle) g_need_resched = true;
}

void ReturnToUserWork() {
  if (!g_need_resched) return;
  g_need_resched = false;
  ++g_kc.preemptions;
  Schedule();
}

void SetPreemption(bool on) { g_preempt = on; }

}  // namespace guest

using namespace guest;

// First code of a new task, still inside the Schedule() that switched to it
// (the run-queue lock is held, interrupts are off): finish that Schedule.
extern "C" void TaskBootstrap() {
  g_rq_lock.Unlock();
  // A kernel thread starts with interrupts on (Linux: finish_task_switch);
  // a user task gets IF=1 from its iretq frame instead.
  if (!g_current->user) ArchIrqRestore(cpu::kRflagsIf);
}

extern "C" void TaskExitCurrent() { ExitCurrent(0); }
