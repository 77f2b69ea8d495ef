// System calls from ring 3 (kernel/syscall_abi.h lists them).
#ifndef GUEST_KERNEL_SYSCALL_H_
#define GUEST_KERNEL_SYSCALL_H_

#include "arch/trap.h"

namespace guest {

// Runs the system call in `f` (RAX = number) and stores the result in f->rax.
// Entered from the int 0x80 gate or from the #UD fallback, with IF=0.
void SyscallEntry(TrapFrame* f);

struct Task;
// A self-check of `t` failed: prints which and shuts down with code 1.
[[noreturn]] void SelfCheckFailed(const Task* t, unsigned long check_id);

}  // namespace guest

#endif  // GUEST_KERNEL_SYSCALL_H_
