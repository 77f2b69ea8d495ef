// workload=lock,iters=I,cs=L: a contended spinlock across every CPU. One
// incrementer per CPU (CPU 0 too; the others in a CALL IPI, started before
// CPU 0 begins its own) takes one shared SpinLock I times (CPU 0 with
// LockIrqSave, the others, in their IPI handler, with Lock); inside, it reads the shared counter,
// spins L pause iterations (the critical section's length) and writes the value plus one back, so a
// lock that let two CPUs in would lose an increment. CPU 0 then waits for every CALL and checks the
// counter is N·I.
//
// How a contended Lock() waits is the spinlock and yield pv ops
// (kernel/spinlock.h). How often it is contended depends on timing, so the
// counts are not functions of N, I and L; what holds exactly is the
// identities between the guest's per-CPU counts (kernel.lock_*,
// smp.cpu<n>.lock_*) and the VMM's per-vCPU exits (docs/exit-model.md
// "SMP"). With one CPU there is no contention: no spin, wait, kick or yield.
#include "arch/cpu.h"
#include "kernel/percpu.h"
#include "kernel/sched.h"
#include "kernel/smp.h"
#include "kernel/spinlock.h"
#include "kernel/syscall.h"
#include "kernel/syscall_abi.h"
#include "workloads/workload.h"

namespace guest {
namespace {

struct Shared {
  SpinLock lock;
  uint64_t counter = 0;  // only touched under `lock`
  uint64_t iters = 0;
  uint64_t cs = 0;
};
Shared g_shared;

void Increment() {
  const uint64_t value = *static_cast<volatile uint64_t*>(&g_shared.counter);
  for (uint64_t j = 0; j < g_shared.cs; ++j) cpu::Pause();
  *static_cast<volatile uint64_t*>(&g_shared.counter) = value + 1;
}

// On another CPU, in its IPI handler: interrupts are off already.
uint64_t Incrementer(uint64_t) {
  for (uint64_t i = 0; i < g_shared.iters; ++i) {
    g_shared.lock.Lock();
    Increment();
    g_shared.lock.Unlock();
  }
  return g_shared.iters;
}

// On CPU 0, with the irq pv ops (spin_lock_irqsave).
void IncrementerIrqSave() {
  for (uint64_t i = 0; i < g_shared.iters; ++i) {
    const uint64_t flags = g_shared.lock.LockIrqSave();
    Increment();
    g_shared.lock.UnlockIrqRestore(flags);
  }
}

}  // namespace

void RunLock(const WorkloadArgs& args) {
  const uint64_t others = OtherCpusMask();
  const uint64_t cpus = CpusUp();
  WorkloadRecord rec("lock");
  g_shared.counter = 0;
  g_shared.iters = args.Get("iters");
  g_shared.cs = args.Get("cs");

  SmpCallFunctionStart(others, Incrementer, 0);
  IncrementerIrqSave();
  SmpCallWait(others);
  SmpWaitBlocked(others);

  uint64_t checks = 0;
  if (g_shared.counter != cpus * g_shared.iters) SelfCheckFailed(Current(), kCheckLock);
  ++checks;
  for (uint64_t rest = others; rest != 0; rest &= rest - 1) {
    if (SmpCallResult(static_cast<uint32_t>(__builtin_ctzll(rest))) != g_shared.iters)
      SelfCheckFailed(Current(), kCheckLock);
    ++checks;
  }
  rec.Put("cpus", cpus);
  rec.Put("iters", g_shared.iters);
  rec.Put("cs", g_shared.cs);
  rec.Put("counter", g_shared.counter);
  rec.Finish(checks);
}

}  // namespace guest
