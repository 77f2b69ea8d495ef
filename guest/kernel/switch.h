// The context switch, shaped like Linux's __switch_to.
#ifndef GUEST_KERNEL_SWITCH_H_
#define GUEST_KERNEL_SWITCH_H_

#include "kernel/sched.h"

namespace guest {

// Switches from `prev` (the current task) to `next`. Called by Schedule()
// with the run-queue lock held and interrupts off; returns when `prev`
// runs again.
void ContextSwitch(Task* prev, Task* next);

// Gives `t` (not running) these TLS descriptors and the matching %fs/%gs
// selectors (slot 0 -> %fs, slot 1 -> %gs, slot 2 unused by selectors).
void SetTaskTls(Task* t, const uint64_t tls[kTlsSlots]);

// Gives `t` (not running) x86-64 TLS: %fs is null and its base `base`,
// written on a switch per the fs_base variant (0: none).
void SetTaskFsBase(Task* t, uint64_t base);

// After a set_tls system call: sends the current task's changed slots
// (per the tls variant) and reloads %fs/%gs.
void ReloadTls(Task* t);

// Boot, after MemInit: sets CR0.TS (nobody owns the FPU), forgets the TLS
// shadow and records the kernel's address space as the loaded one.
void SwitchInit();
// Boot, after the ring-3 #NM probe: clears TS for the eager policy.
void FpuPolicyInit();

}  // namespace guest

extern "C" void SwitchStacks(uint64_t* save_rsp, uint64_t next_rsp);

#endif  // GUEST_KERNEL_SWITCH_H_
