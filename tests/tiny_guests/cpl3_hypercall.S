/* Drops to ring 3 with iretq, IOPL=3 so that `out` is allowed there, and
 * issues sched_op(shutdown) from ring 3. The VMM must refuse it with -EPERM
 * before any handler runs; the user code keeps the result in R15 and spins
 * until the test's timeout. Software KVM backends force IOPL to 0 on iretq
 * (docs/hosts.md), so there the `out` raises #GP instead and, with no IDT,
 * the guest triple-faults: the test expects that outcome on such hosts. */
#include "tiny.h"
.globl _start
_start:
  /* Make the 2 MiB page holding this code user-accessible: PD entry 0 of the
   * VMM's tables (PD at 0x12000) maps [0, 2 MiB). */
  orq $4, 0x12000
  orq $4, 0x11000
  orq $4, 0x10000
  mov %cr3, %rax
  mov %rax, %cr3
  pushq $0x1b          /* SS: user data */
  pushq $0x80000       /* RSP */
  pushq $0x3002        /* RFLAGS: IOPL=3, IF=0 */
  pushq $0x23          /* CS: user code */
  lea user(%rip), %rax
  pushq %rax
  iretq
user:
  HYPERCALL(29)        /* sched_op(shutdown) from ring 3: must be refused */
  mov %rax, %r15
1:
  pause
  jmp 1b
