// Spinlocks. One vCPU: a spinlock is a held flag plus interrupts disabled,
// and it asserts what SMP would hang on (taking it with interrupts on,
// taking it twice).
#ifndef GUEST_KERNEL_SPINLOCK_H_
#define GUEST_KERNEL_SPINLOCK_H_

#include <stdint.h>

namespace guest {

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

// True when interrupts are disabled (RFLAGS.IF clear).
bool IrqsOff();

}  // namespace guest

#endif  // GUEST_KERNEL_SPINLOCK_H_
