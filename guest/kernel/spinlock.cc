#include "kernel/spinlock.h"

#include "arch/cpu.h"
#include "kernel/panic.h"
#include "pv/pv_ops.h"

namespace guest {

// Any context, any locks held. Reads RFLAGS (save_fl: no exit on either
// backend).
bool IrqsOff() { return (ArchSaveFlags() & cpu::kRflagsIf) == 0; }

// Caller must not hold this lock; interrupts may be on or off. Disables
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

// Interrupts must be off; caller must not hold this lock (one vCPU: that
// would be a self-deadlock). Leaves interrupts off. Never sleeps.
void SpinLock::Lock() {
  GUEST_ASSERT(IrqsOff());  // a lock taken with IF set could be re-entered by an interrupt
  GUEST_ASSERT(!held_);     // one vCPU: a held lock here is a self-deadlock
  held_ = true;
}

// Caller holds this lock, and interrupts must still be off. Leaves
// interrupts off. Never sleeps.
void SpinLock::Unlock() {
  GUEST_ASSERT(held_);
  GUEST_ASSERT(IrqsOff());  // the lock was held with IF set
  held_ = false;
}

}  // namespace guest
