// The scheduler core: tasks, Schedule(), the idle task, join and exit.
// Also the umbrella header for the pieces it is built from, so a user of
// tasks gets them all: spinlock.h, waitqueue.h, timer.h (runqueue.h is
// internal to the scheduler).
#ifndef GUEST_KERNEL_SCHED_H_
#define GUEST_KERNEL_SCHED_H_

#include <stdint.h>

#include "kernel/percpu.h"
#include "kernel/spinlock.h"
#include "kernel/timer.h"
#include "kernel/waitqueue.h"
#include "lib/tls_shadow.h"

namespace guest {

struct Task;
struct File;
struct Mm;

// Lets one task wait for a group of tasks to exit: only the last exit
// wakes the waiter, so joining adds exactly one switch (see README).
struct Join {
  SpinLock lock;  // protects live and waiter (tasks may exit on any CPU)
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
  // The CPU the task runs on, or whose run queue it waits on: the creating
  // CPU's unless set before StartTask; changed only by MigrateCurrent.
  uint32_t cpu;
  bool user;
  Task* run_next;
  bool on_runq;
  Task* wait_next;
  WaitQueue* waiting_on;
  uint64_t exit_value;
  Join* join;  // may be null
  // The address space a user task runs in. Null for kernel threads, which
  // borrow whichever one is loaded (Linux's lazy TLB: no CR3 write).
  Mm* mm;

  // TLS: the three descriptors for GDT slots 7-9 and the selectors that
  // __switch_to reloads into %fs and %gs (0 for none).
  uint64_t tls[kTlsSlots];
  uint16_t fs_sel;
  uint16_t gs_sel;
  // x86-64 TLS: a 64-bit FS base that __switch_to writes after loading a
  // null %fs (0 for none; fs_sel is then 0).
  uint64_t fs_base;

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

// Turns the boot context into task 0 ("init") and creates CPU 0's idle
// task; gives every other CPU an idle task for its boot context (which is
// idling in ApMain).
void SchedInit();

// A kernel thread running fn(arg) at CPL 0; StartTask makes it runnable.
Task* CreateKernelThread(const char* name, void (*fn)(uint64_t), uint64_t arg);
// A ring-3 task entering `entry(arg)` on `user_stack_top` in address space
// `mm` (KernelMm() for tasks that need no private pages); the caller fills
// in tls/fds/fpu fields, then calls StartTask.
Task* CreateUserTask(const char* name, uint64_t entry, uint64_t arg, uint64_t user_stack_top,
                     Mm* mm);
void StartTask(Task* t);

// Gives up the CPU; the current task stays runnable unless the caller set
// its state to kBlocked first.
void Schedule();
void Yield();
// True when `t` is its CPU's idle task.
bool IsIdle(const Task* t);
// Moves the current task to CPU `cpu` (< NrCpus()): it switches away here
// and goes on there, with its TLS and FPU state loaded by that CPU's
// context switch. Caller holds no spinlock.
void MigrateCurrent(uint32_t cpu);
// A secondary CPU's idle loop, on its boot stack, once it is up: runs
// tasks queued on it (Schedule), otherwise blocks until an interrupt
// (guest/README.md "Secondary CPUs").
[[noreturn]] void ApIdleLoop();

// Adds `t` (not yet started) to `join`.
void JoinAdd(Join* join, Task* t);
// Blocks until every task added to `join` has exited.
void JoinWait(Join* join);
// Starts `t` and blocks until it exits; returns its exit value.
uint64_t RunAndWait(Task* t);
[[noreturn]] void ExitCurrent(uint64_t value);

}  // namespace guest

extern "C" void TaskExitCurrent();
extern "C" void TaskBootstrap();

#endif  // GUEST_KERNEL_SCHED_H_
