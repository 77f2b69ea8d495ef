// Spinlocks, real across CPUs. A lock is a test-and-set word, the CPU that
// holds it, and the set of CPUs asleep in lock_wait on it (Linux's pv
// qspinlock keeps the same "halted waiter" record so the unlocker knows whom
// to kick). How a contended Lock() waits is the `spinlock` pv op, the slow
// path PvOpsInit installs as pv_ops.lock_slowpath (its yield, wait and kick
// are pv_ops.yield, lock_wait and lock_kick, pv/pv_ops.h):
//   naive      spin (pause) until the word is free; every kYieldEvery spins
//              give the vCPU up with the `yield` pv op (naive: sched_op
//              yield; optimized: a directed yield to the holder's vCPU)
//   optimized  spin kSpinThreshold times, then record itself as a waiter
//              and sleep in lock_wait until the unlocker kicks it
//              (lock_kick); the unlocker kicks exactly one recorded waiter
// The single-CPU rules still hold and are checked: a lock is taken and
// released with interrupts off, never by the CPU that holds it, and released
// only by its holder; a broken one panics naming the lock, its owner, the
// CPU that asked and the GDT base it read (SpinLock::Broken).
#ifndef GUEST_KERNEL_SPINLOCK_H_
#define GUEST_KERNEL_SPINLOCK_H_

#include <stdint.h>

#include "lib/format.h"

namespace guest {

// Spins of the optimized variant before it sleeps in lock_wait (Linux's
// SPIN_THRESHOLD, scaled down: a spin here is an emulated instruction on
// some hosts).
inline constexpr uint64_t kSpinThreshold = 128;
// Spins of the naive variant between two yields.
inline constexpr uint64_t kYieldEvery = 128;

class SpinLock {
 public:
  // spin_lock_irqsave: returns the flags to hand back to UnlockIrqRestore.
  uint64_t LockIrqSave();
  void UnlockIrqRestore(uint64_t flags);
  // Plain lock/unlock, for callers that already run with interrupts off.
  void Lock();
  void Unlock();
  bool held() const { return __atomic_load_n(&locked_, __ATOMIC_ACQUIRE) != 0; }

  // The spinlock variants' slow paths (pv_ops.lock_slowpath): a Lock() by
  // CPU `me` whose first try failed returns holding `lock`. Naive: spin,
  // yielding every kYieldEvery spins; optimized: spin kSpinThreshold times,
  // then sleep in lock_wait.
  static void SpinSlowPath(SpinLock* lock, uint32_t me);
  static void SleepSlowPath(SpinLock* lock, uint32_t me);

 private:
  bool TryLock();
  // A broken rule: panics with "spinlock 0x<this>: CPU <me> (GDT base
  // 0x<sgdt>) <what> (owner <owner_ or none>)", all a reader needs to tell
  // a kernel bug from a CPU that misidentified itself. Out of line and cold.
  [[noreturn]] void Broken(const char* what, uint32_t me) const;

  static constexpr uint32_t kNoOwner = ~0u;

  uint32_t locked_ = 0;  // 1 while held: the word lock_wait watches
  // The holder's CPU: written after taking, reset to kNoOwner before
  // releasing.
  uint32_t owner_ = kNoOwner;
  uint64_t waiters_ = 0;  // bit n: CPU n recorded itself before lock_wait
};

// Per-CPU counts of the spinlock's events, written by that CPU only.
struct LockCounts {
  uint64_t acquisitions;  // Lock() calls that returned
  uint64_t spins;         // pause iterations while the lock was held by another
  uint64_t waits;         // lock_wait hypercalls issued
  uint64_t kicked_wakes;  // of them, those that returned KICKED
  uint64_t kicks;         // lock_kick hypercalls issued
  uint64_t yields;        // yield pv ops issued (sched_op yield or yield_to)
};
// Appends `<prefix>.lock_acquisitions`, .lock_spins, .lock_waits,
// .lock_kicked_wakes, .lock_kicks and .lock_yields for CPU `cpu`.
void AppendLockCounts(StrView prefix, uint32_t cpu, TextBuf* out);

// True when interrupts are disabled (RFLAGS.IF clear).
bool IrqsOff();

}  // namespace guest

#endif  // GUEST_KERNEL_SPINLOCK_H_
