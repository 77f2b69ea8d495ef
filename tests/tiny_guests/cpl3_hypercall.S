/* Drops to ring 3 with iretq and issues a hypercall there. The VMM refuses
 * it with -EPERM; ring 3 cannot shut down, so it then spins on `out` to an
 * unclaimed port with RAX holding the result, and the test stops it there by
 * timeout and reads RAX from the registers... simpler: the user code stores
 * RAX to memory and loops; the kernel is never re-entered. The test checks
 * the VMM's refused_cpl3 counter and that the run ended by timeout. */
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
  pushq $0x2           /* RFLAGS: IF=0 */
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
