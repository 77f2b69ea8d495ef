#include "kernel/sched.h"

#include "arch/cpu.h"
#include "arch/trap.h"
#include "kernel/boot.h"
#include "kernel/counters.h"
#include "kernel/mem.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"
#include "kernel/runqueue.h"
#include "kernel/smp.h"
#include "kernel/switch.h"
#include "minivmm_abi/boot.h"
#include "pv/pv_ops.h"

extern "C" void task_entry();
extern "C" uint64_t boot_stack_bottom[];

namespace guest {

namespace {

constexpr uint64_t kStackGuard = 0x57ac6c0ffee5afe5ull;
constexpr uint64_t kKernelStackPages = 2;

uint64_t g_next_pid = 0;

// Task context, no lock needed (the task is not visible to the scheduler
// yet). Allocates its page; never sleeps.
Task* NewTask(const char* name, bool user) {
  Task* t = static_cast<Task*>(AllocPages(1));
  static_assert(sizeof(Task) <= kPageSize);
  t->pid = __atomic_fetch_add(&g_next_pid, 1, __ATOMIC_RELAXED);
  t->name = name;
  t->user = user;
  t->state = TaskState::kRunnable;
  t->cpu = CurrentCpu();
  // Default x87/SSE state (FCW 0x37f, MXCSR 0x1f80): written as bytes so a
  // task's first fxrstor never needs fninit, which is x87 arithmetic-class.
  t->fxsave[0] = 0x7f;
  t->fxsave[1] = 0x03;
  t->fxsave[24] = 0x80;
  t->fxsave[25] = 0x1f;
  return t;
}

// Kernel stack: [guard][ ... stack ... ] top. Returns the top.
// Task context, no lock needed (`t` is not started yet). Never sleeps.
uint64_t NewKernelStack(Task* t) {
  uint8_t* base = static_cast<uint8_t*>(AllocPages(kKernelStackPages));
  t->kstack_guard = reinterpret_cast<uint64_t*>(base);
  *t->kstack_guard = kStackGuard;
  t->kstack_top = reinterpret_cast<uint64_t>(base) + kKernelStackPages * kPageSize;
  return t->kstack_top;
}

// The frame SwitchStacks pops for a task that has never run:
// r15 r14 r13 r12 rbx rbp, RFLAGS, then the return address task_entry.
// RFLAGS.IF is 0 (task_entry runs inside Schedule with interrupts off),
// except under pvops irq:shared, where the mask keeps them off and IF is 1.
// Only writes the new task's stack: no lock needed, never sleeps.
uint64_t* PushSwitchFrame(uint64_t* sp, uint64_t fn, uint64_t arg, bool user) {
  *--sp = reinterpret_cast<uint64_t>(task_entry);
  *--sp = PvIrqShared() ? 0x202 : 0x2;  // rflags
  *--sp = 0;                            // rbp
  *--sp = user ? 1 : 0;                 // rbx
  *--sp = fn;                           // r12
  *--sp = arg;                          // r13
  *--sp = 0;                            // r14
  *--sp = 0;                            // r15
  return sp;
}

// CPU 0's idle task's body: runs only when its run queue is empty, holds
// no lock. Checks the queue with interrupts off, then blocks the vCPU until
// an interrupt (safe_halt returns with interrupts on) or, if a task became
// runnable, turns interrupts back on; either way calls Schedule.
void IdleLoop(uint64_t) {
  for (;;) {
    ArchIrqDisable();
    if (RunqEmpty()) {
      // Nothing can ever wake a task without an interrupt source: the timer
      // or another CPU.
      if (g_boot.timer_hz == 0 && NrCpus() == 1)
        Panic("deadlock: every task is blocked and the timer is off");
      Count(&KernelCounters::idle_blocks);
      pv_ops.safe_halt();  // returns with IF=1 after the interrupt ran
    } else {
      ArchIrqEnable();
    }
    Schedule();
  }
}

// Right after a switch, on the task switched to: hands a task the previous
// one left for another CPU (MigrateCurrent) to that CPU, now that its
// context is saved. Caller holds g_rq_lock.
void FinishSwitch() {
  Cpu& me = ThisCpu();
  if (Task* t = me.leaving) {
    me.leaving = nullptr;
    Enqueue(t);
  }
}

}  // namespace

// Boot only, once, before interrupts are first enabled; no lock held.
// Never sleeps.
void SchedInit() {
  Cpu& me = g_cpus[0];
  Task* init = NewTask("init", false);
  init->state = TaskState::kRunning;
  init->kstack_guard = boot_stack_bottom;
  *init->kstack_guard = kStackGuard;
  init->kstack_top = reinterpret_cast<uint64_t>(boot_stack_bottom) + 16384;
  me.current = init;
  // Never started: an idle task is never on a run queue; Schedule() picks
  // it when the queue is empty.
  me.idle = CreateKernelThread("idle", IdleLoop, 0);
  // Every other CPU's idle task is its boot context, already running
  // ApIdleLoop on its VMM-given stack: its first switch away saves it.
  for (uint32_t cpu = 1; cpu < NrCpus(); ++cpu) {
    Task* idle = NewTask("idle", false);
    idle->cpu = cpu;
    idle->state = TaskState::kRunning;
    const uint64_t top = MVMM_CPU_STACK_TOP(cpu);
    idle->kstack_top = top;
    idle->kstack_guard = reinterpret_cast<uint64_t*>(top - MVMM_AP_STACK_SIZE);
    *idle->kstack_guard = kStackGuard;
    g_cpus[cpu].idle = idle;
    __atomic_store_n(&g_cpus[cpu].current, idle, __ATOMIC_RELEASE);
  }
}

// Task context, no lock needed: the new task is not on the run queue until
// StartTask. Never sleeps.
Task* CreateKernelThread(const char* name, void (*fn)(uint64_t), uint64_t arg) {
  Task* t = NewTask(name, false);
  uint64_t* sp = reinterpret_cast<uint64_t*>(NewKernelStack(t));
  t->saved_rsp =
      reinterpret_cast<uint64_t>(PushSwitchFrame(sp, reinterpret_cast<uint64_t>(fn), arg, false));
  return t;
}

// Task context, no lock needed: the new task is not on the run queue until
// StartTask. Never sleeps.
Task* CreateUserTask(const char* name, uint64_t entry, uint64_t arg, uint64_t user_stack_top,
                     Mm* mm) {
  Task* t = NewTask(name, true);
  t->mm = mm;
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

// Caller must not hold g_rq_lock (taken here with irqsave); interrupts may
// be on or off and are restored. Never sleeps: `t` runs once the caller
// gives up the CPU.
void StartTask(Task* t) {
  GUEST_ASSERT(t->cpu < NrCpus());
  uint64_t f = g_rq_lock.LockIrqSave();
  Enqueue(t);
  g_rq_lock.UnlockIrqRestore(f);
}

// Caller must hold no spinlock (the next task could try to take it);
// interrupts may be on or off. Takes g_rq_lock with irqsave, which the
// switch hands to the next task (it drops it in its own Schedule, or in
// TaskBootstrap if new). Switches away unless the current task is the only
// one runnable here; returns when it runs again (on its CPU, which
// MigrateCurrent may have changed), with g_rq_lock released and its own
// interrupt state restored.
void Schedule() {
  uint64_t flags = g_rq_lock.LockIrqSave();
  Cpu& me = ThisCpu();
  Task* prev = me.current;
  if (prev->state == TaskState::kRunning && prev != me.idle) {
    prev->state = TaskState::kRunnable;
    if (prev->cpu == me.id) {
      RunqPush(prev);
    } else {
      me.leaving = prev;  // queued there once switched away (FinishSwitch)
    }
  }
  Task* next = RunqPop();
  if (next == nullptr) next = me.idle;
  if (next != prev) {
    next->state = TaskState::kRunning;
    me.user_ticks = 0;  // `next` starts a time slice (timer.cc)
    ContextSwitch(prev, next);
    // Resumed: `prev` is running again, on the CPU it was queued on.
    FinishSwitch();
  } else {
    prev->state = TaskState::kRunning;
  }
  g_rq_lock.UnlockIrqRestore(flags);
}

// Same contract as Schedule: no spinlock held; may switch away.
void Yield() { Schedule(); }

// Any context, no lock needed (idle tasks are set once at boot).
bool IsIdle(const Task* t) { return t == g_cpus[t->cpu].idle; }

// Task context, holding no spinlock. The task is queued on `cpu` only after
// this CPU has switched away from it (FinishSwitch), so no CPU can run it
// before its context is saved.
void MigrateCurrent(uint32_t cpu) {
  GUEST_ASSERT(cpu < NrCpus());
  Task* t = Current();
  if (t->cpu == cpu) return;
  Count(&KernelCounters::migrations);
  t->cpu = cpu;
  Schedule();
}

// A secondary CPU, interrupts on, holding no lock. The check for queued
// tasks and the block are one window (IdleBlock): an interrupt taken inside
// it restarts it, so a task queued just before the block is never missed
// (the waker's IPI lands in the window or ends the block). Before SchedInit
// nothing is ever queued here, so the loop only blocks.
void ApIdleLoop() {
  Cpu& me = ThisCpu();
  for (;;) {
    TakeFlushFlag();
    if (__atomic_load_n(&me.runq_head, __ATOMIC_ACQUIRE) != nullptr) {
      PvSecondaryIrqInit();
      Schedule();
      continue;
    }
    TickIdle();
    IdleBlock(&me.runq_head);
  }
}

// Task context, before `t` is started and before JoinWait; no lock needed
// (nothing of `join` is shared yet). Never sleeps.
void JoinAdd(Join* join, Task* t) {
  t->join = join;
  ++join->live;
}

// Caller must hold no spinlock; interrupts may be on or off. Disables
// interrupts (so no exit is missed between the check and the sleep) and
// sleeps on join->waiter until the last task added to `join` exits;
// restores the interrupt state on return.
void JoinWait(Join* join) {
  uint64_t f = join->lock.LockIrqSave();
  while (join->live != 0) SleepOn(&join->waiter, &join->lock);
  join->lock.UnlockIrqRestore(f);
}

// Caller must hold no spinlock. Sleeps (JoinWait) until `t` exits.
uint64_t RunAndWait(Task* t) {
  Join join;
  JoinAdd(&join, t);
  StartTask(t);
  JoinWait(&join);
  return t->exit_value;
}

// Called by the exiting task itself, holding no spinlock; interrupts may be
// on or off (turned off here for good). Wakes its join's waiter if it is
// the last, then switches away for ever.
void ExitCurrent(uint64_t value) {
  ArchIrqDisable();
  Task* t = Current();
  t->exit_value = value;
  if (Join* join = t->join) {
    join->lock.Lock();
    if (--join->live == 0) WakeAll(&join->waiter);
    join->lock.Unlock();
  }
  t->state = TaskState::kDead;
  Schedule();
  Panic("a dead task was scheduled");
}

}  // namespace guest

using namespace guest;

// First code of a new task, still inside the Schedule() that switched to it:
// entered holding g_rq_lock with interrupts off (from task_entry). Finishes
// that Schedule: drops g_rq_lock; a kernel thread turns interrupts on.
// Never sleeps.
extern "C" void TaskBootstrap() {
  FinishSwitch();
  g_rq_lock.Unlock();
  // A kernel thread starts with interrupts on (Linux: finish_task_switch);
  // a user task gets IF=1 from its iretq frame instead, which under pvops
  // irq:shared does not clear the mask: there the user task unmasks here.
  if (!Current()->user || PvIrqShared()) ArchIrqRestore(cpu::kRflagsIf);
}

// Called from task_entry when a kernel thread's function returns: holds no
// spinlock. Never returns (ExitCurrent).
extern "C" void TaskExitCurrent() { ExitCurrent(0); }
