#include "kernel/spinlock.h"

#include "arch/cpu.h"
#include "kernel/hypercall.h"
#include "kernel/panic.h"
#include "kernel/smp.h"
#include "minivmm_abi/boot.h"
#include "minivmm_abi/hypercall.h"
#include "pv/pv_ops.h"

namespace guest {
namespace {

LockCounts g_lock_counts[MVMM_MAX_CPUS];

}  // namespace

// Any context, any locks held. Off when RFLAGS.IF is clear (always so in
// an interrupt or trap gate) or when the irq pv ops say so (save_fl: no
// exit on either backend; under irq:shared, this CPU's vcpu_info mask).
bool IrqsOff() {
  if ((cpu::SaveFlags() & cpu::kRflagsIf) == 0) return true;
  return (ArchSaveFlags() & cpu::kRflagsIf) == 0;
}

void AppendLockCounts(StrView prefix, uint32_t cpu, TextBuf* out) {
  if constexpr (!kCounters) return;
  const LockCounts& c = g_lock_counts[cpu];
  out->Kv(prefix, "lock_acquisitions", c.acquisitions);
  out->Kv(prefix, "lock_spins", c.spins);
  out->Kv(prefix, "lock_waits", c.waits);
  out->Kv(prefix, "lock_kicked_wakes", c.kicked_wakes);
  out->Kv(prefix, "lock_kicks", c.kicks);
  out->Kv(prefix, "lock_yields", c.yields);
}

// Caller must not hold this lock; interrupts may be on or off (on a
// secondary CPU under irq:shared, after PvSecondaryIrqInit). Disables
// interrupts and returns the flags from before. Never sleeps.
uint64_t SpinLock::LockIrqSave() {
  uint64_t f = ArchLocalIrqSave();
  Lock();
  return f;
}

// Caller holds this lock (taken by LockIrqSave, so interrupts are off).
// Releases it, then restores `flags` (interrupts back on if they were on
// before LockIrqSave). Never sleeps.
void SpinLock::UnlockIrqRestore(uint64_t flags) {
  Unlock();
  ArchIrqRestore(flags);
}

// One atomic test-and-set: a full barrier (xchg), so a waiter's record in
// `waiters_` before it is ordered against the unlocker's release and read.
bool SpinLock::TryLock() { return __atomic_exchange_n(&locked_, 1u, __ATOMIC_SEQ_CST) == 0; }

void SpinLock::Broken(const char* what, uint32_t me) const {
  const uint32_t owner = __atomic_load_n(&owner_, __ATOMIC_RELAXED);
  char storage[160];
  TextBuf msg(storage, sizeof(storage));
  msg.Str("spinlock 0x")
      .Hex(reinterpret_cast<uint64_t>(this))
      .Str(": CPU ")
      .Dec(me)
      .Str(" (GDT base 0x")
      .Hex(GdtBase())
      .Str(") ")
      .Str(what)
      .Str(" (owner ");
  if (owner == kNoOwner) {
    msg.Str("none)");
  } else {
    msg.Dec(owner).Char(')');
  }
  Panic(msg.View());
}

// Interrupts must be off; the caller must not hold this lock (that would be
// a self-deadlock). Leaves interrupts off. A contended lock is waited for
// with the `spinlock` variant (pv_ops.lock_slowpath); the optimized one may
// sleep in lock_wait, which an interrupt pending on this vCPU ends at once.
void SpinLock::Lock() {
  const uint32_t me = CurrentCpu();
  // A lock taken with IF set could be re-entered by an interrupt.
  if (!IrqsOff()) [[unlikely]] Broken("takes it with interrupts on", me);
  // owner_ is this CPU's number only between its own taking and releasing:
  // held and mine is a self-deadlock.
  if (held() && __atomic_load_n(&owner_, __ATOMIC_RELAXED) == me) [[unlikely]]
    Broken("takes it while it holds it", me);
  if (!TryLock()) pv_ops.lock_slowpath(this, me);
  __atomic_store_n(&owner_, me, __ATOMIC_RELAXED);
  if constexpr (kCounters) ++g_lock_counts[me].acquisitions;
}

// Test and test-and-set: spin on a plain read until the word is free, then
// try again; every kYieldEvery spins, the `yield` pv op towards the holder.
void SpinLock::SpinSlowPath(SpinLock* lock, uint32_t me) {
  LockCounts& c = g_lock_counts[me];
  uint64_t spins = 0;
  do {
    while (__atomic_load_n(&lock->locked_, __ATOMIC_RELAXED) != 0) {
      cpu::Pause();
      if constexpr (kCounters) ++c.spins;
      if (++spins % kYieldEvery != 0) continue;
      if constexpr (kCounters) ++c.yields;
      pv_ops.yield(__atomic_load_n(&lock->owner_, __ATOMIC_RELAXED), me);
    }
  } while (!lock->TryLock());
}

// The same spin, and every kSpinThreshold spins a sleep in lock_wait until
// the unlocker kicks this CPU (or the word is free already).
void SpinLock::SleepSlowPath(SpinLock* lock, uint32_t me) {
  LockCounts& c = g_lock_counts[me];
  const uint64_t bit = 1ull << me;
  uint64_t spins = 0;
  do {
    while (__atomic_load_n(&lock->locked_, __ATOMIC_RELAXED) != 0) {
      cpu::Pause();
      if constexpr (kCounters) ++c.spins;
      if (++spins % kSpinThreshold != 0) continue;
      // Record this CPU as a waiter, then look once more: an unlocker that
      // released before the record was visible cannot have seen it.
      __atomic_fetch_or(&lock->waiters_, bit, __ATOMIC_SEQ_CST);
      if (lock->TryLock()) {
        __atomic_fetch_and(&lock->waiters_, ~bit, __ATOMIC_SEQ_CST);
        return;
      }
      if constexpr (kCounters) ++c.waits;
      const int64_t r = pv_ops.lock_wait(&lock->locked_, 1);
      GUEST_ASSERT(r >= 0);
      if (kCounters && r == MVMM_LOCK_WAIT_KICKED) ++c.kicked_wakes;
      __atomic_fetch_and(&lock->waiters_, ~bit, __ATOMIC_SEQ_CST);
    }
  } while (!lock->TryLock());
}

// Caller holds this lock, and interrupts must still be off. Leaves
// interrupts off. Releases the word, then kicks one recorded waiter (the
// lowest-numbered CPU whose record it is first to clear). Never sleeps.
void SpinLock::Unlock() {
  const uint32_t me = CurrentCpu();
  if (!held()) [[unlikely]] Broken("releases it while it is free", me);
  if (__atomic_load_n(&owner_, __ATOMIC_RELAXED) != me) [[unlikely]]
    Broken("releases it while another CPU holds it", me);
  // The lock was held with IF set.
  if (!IrqsOff()) [[unlikely]] Broken("releases it with interrupts on", me);
  __atomic_store_n(&owner_, kNoOwner, __ATOMIC_RELAXED);
  __atomic_store_n(&locked_, 0u, __ATOMIC_SEQ_CST);
  uint64_t waiters = __atomic_load_n(&waiters_, __ATOMIC_SEQ_CST);
  while (waiters != 0) {
    const uint64_t bit = waiters & -waiters;
    const uint64_t before = __atomic_fetch_and(&waiters_, ~bit, __ATOMIC_SEQ_CST);
    if (before & bit) {
      if constexpr (kCounters) ++g_lock_counts[me].kicks;
      pv_ops.lock_kick(static_cast<uint32_t>(__builtin_ctzll(bit)));
      return;
    }
    waiters = before & ~bit;  // that waiter took itself off: the next one
  }
}

}  // namespace guest
