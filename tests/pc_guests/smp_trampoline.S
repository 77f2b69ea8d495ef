/* pc_smp's assembly: the APs' real-mode trampoline (copied to
   SMP_TRAMPOLINE_BASE, started by SIPI vector SMP_TRAMPOLINE_BASE >> 12),
   their 32-bit entry, and the interrupt stubs. */
#include "smp.h"

  .text
  .code16
  .globl smp_trampoline_start, smp_trampoline_end
smp_trampoline_start:
  cli
  movw %cs, %ax
  movw %ax, %ds
  lgdtl tramp_gdtr - smp_trampoline_start
  movl %cr0, %eax
  orl $1, %eax
  movl %eax, %cr0
  ljmpl $0x08, $ap_entry32
  .align 8
tramp_gdtr:
  .word 23 /* entry.S's GDT: three descriptors */
  .long gdt
smp_trampoline_end:

  .code32
ap_entry32:
  movw $0x10, %ax
  movw %ax, %ds
  movw %ax, %es
  movw %ax, %ss
  movw %ax, %fs
  movw %ax, %gs
  movl $1, %eax
  lock xaddl %eax, ap_next_index
  cmpl $SMP_MAX_CPUS, %eax
  jae 2f
  movl %eax, %ecx
  incl %ecx
  shll $SMP_AP_STACK_SHIFT, %ecx
  leal ap_stacks(%ecx), %esp
  pushl %eax
  call ap_main
2:
  cli
  hlt
  jmp 2b

  .data
  .align 4
ap_next_index: .long 1 /* the BSP is index 0 */

  .text
  .globl isr_ipi, isr_spurious, isr_exception, isr_unexpected
isr_ipi:
  pushal
  cld
  call ipi_handler
  popal
  iret
isr_spurious:
  iret
isr_exception:
  cld
  call exception_handler
isr_unexpected:
  cld
  call unexpected_handler

  .section .note.GNU-stack, "", @progbits
