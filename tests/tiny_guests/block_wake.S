/* The timer wakes a blocked vCPU. Installs a one-entry-deep IDT whose vector
 * 0x20 handler counts in R13 and returns, then:
 *   1. set_timer_op(1): a deadline in the past, so the interrupt is pending
 *      at once; sched_op(block) returns once it is pending (IF stays 0) and
 *      set_if(1) lets it be delivered;
 *   2. sti; hlt with --timer-hz running: the periodic timer wakes the HLT;
 * then shuts down with the number of interrupts taken (R13) as exit code. */
#include "tiny.h"
.globl _start
_start:
  IDT_GATE(idt, 0x20, timer_handler)
  lidt idtr(%rip)
  xor %r13d, %r13d

  mov $1, %edi
  HYPERCALL(15)                     /* set_timer_op(1 ns): already due */
  mov $1, %edi
  xor %esi, %esi
  HYPERCALL(29)                     /* sched_op(block) */
  mov $1, %edi
  HYPERCALL(40)                     /* set_if(1): the interrupt is delivered */
  cli
  sti
  hlt                               /* woken by the periodic timer */
  cli
  mov $2, %edi
  mov %r13d, %esi
  HYPERCALL(29)                     /* shutdown(interrupts taken) */

timer_handler:
  inc %r13d
  iretq

.balign 16
idtr:
  .word 0x21*16 - 1
  .quad idt
.balign 16
idt:
  .fill 0x21*16, 1, 0
