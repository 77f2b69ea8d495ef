// Tasks, the scheduler, spinlocks and wait queues. One vCPU: a spinlock is
// a held flag plus interrupts disabled, and it asserts what SMP would hang on.
#ifndef GUEST_KERNEL_SCHED_H_
#define GUEST_KERNEL_SCHED_H_

#include <stdint.h>

#include "arch/trap.h"
#include "lib/tls_shadow.h"

namespace guest {

struct Task;
struct File;

class SpinLock {
 public:
  // spin_lock_irqsave: returns the flags to hand back to UnlockIrqRestore.
  uint64_t LockIrqSave();
  void UnlockIrqRestore(uint64_t flags);
  // Plain lock/unlock, for callers that already run with interrupts off.
  void Lock();
  void Unlock();
  bool held() const { return held_; }

 private:
  bool held_ = false;
};

// A FIFO of blocked tasks.
struct WaitQueue {
  Task* head = nullptr;
  Task* tail = nullptr;
};

// Lets one task wait for a group of tasks to exit: only the last exit
// wakes the waiter, so joining adds exactly one switch (see README).
struct Join {
  uint64_t live = 0;
  WaitQueue waiter;
};

enum class TaskState : uint8_t { kRunnable, kRunning, kBlocked, kDead };

inline constexpr int kMaxFds = 8;

struct Task {
  uint64_t saved_rsp;   // while not running: where SwitchStacks parked it
  uint64_t kstack_top;  // TSS.rsp0 while this task runs
  uint64_t* kstack_guard;
  uint64_t pid;
  const char* name;
  TaskState state;
  bool user;
  Task* run_next;
  bool on_runq;
  Task* wait_next;
  WaitQueue* waiting_on;
  uint64_t exit_value;
  Join* join;  // may be null

  // TLS: the three descriptors for GDT slots 7-9 and the selectors that
  // __switch_to reloads into %fs and %gs (0 for none).
  uint64_t tls[kTlsSlots];
  uint16_t fs_sel;
  uint16_t gs_sel;

  // FPU (Linux 3.x names): used_math = the task has FPU state; has_fpu =
  // its state is live in the registers (TS_USEDFPU); fpu_counter = consecutive
  // time slices in which it used the FPU; fpu_user = a ring-3 task that may
  // use the FPU (treated as using it every slice where ring-3 #NM is absent).
  bool used_math;
  bool has_fpu;
  bool fpu_user;
  uint32_t fpu_counter;
  alignas(16) uint8_t fxsave[512];

  File* fds[kMaxFds];
};

extern Task* g_current;
extern SpinLock g_rq_lock;

// Turns the boot context into task 0 ("init") and creates the idle task.
void SchedInit();

// A kernel thread running fn(arg) at CPL 0; StartTask makes it runnable.
Task* CreateKernelThread(const char* name, void (*fn)(uint64_t), uint64_t arg);
// A ring-3 task entering `entry(arg)` on `user_stack_top`; the caller fills
// in tls/fds/fpu fields, then calls StartTask.
Task* CreateUserTask(const char* name, uint64_t entry, uint64_t arg, uint64_t user_stack_top);
void StartTask(Task* t);

// Gives up the CPU; the current task stays runnable unless the caller set
// its state to kBlocked first.
void Schedule();
void Yield();

// Blocks the current task on `wq`. Called with `lock` held and interrupts
// off; releases the lock while asleep and holds it again on return.
void SleepOn(WaitQueue* wq, SpinLock* lock);
// Makes every task on `wq` runnable. Interrupts must be off.
void WakeAll(WaitQueue* wq);

// Adds `t` (not yet started) to `join`.
void JoinAdd(Join* join, Task* t);
// Blocks until every task added to `join` has exited.
void JoinWait(Join* join);
// Starts `t` and blocks until it exits; returns its exit value.
uint64_t RunAndWait(Task* t);
[[noreturn]] void ExitCurrent(uint64_t value);

// Timer interrupt and the preemption point on the way back to ring 3.
void TimerInterrupt(TrapFrame* f);
void ReturnToUserWork();
void SetPreemption(bool on);

}  // namespace guest

extern "C" void TaskExitCurrent();
extern "C" void TaskBootstrap();

#endif  // GUEST_KERNEL_SCHED_H_
