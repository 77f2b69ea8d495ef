// Lazy FPU switching: the #NM handler (Linux math_state_restore).
#ifndef GUEST_KERNEL_FPU_H_
#define GUEST_KERNEL_FPU_H_

namespace guest {

// #NM: the current task touched the FPU/SSE with CR0.TS set. Clears TS,
// restores the task's state and makes it the owner. `from_user` records
// that ring-3 #NM works on this host.
void FpuDeviceNotAvailable(bool from_user);

// True once a ring-3 #NM has been seen.
bool Ring3NmSeen();

}  // namespace guest

#endif  // GUEST_KERNEL_FPU_H_
