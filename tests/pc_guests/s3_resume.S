/* pc_s3's resume code: copied to S3_RESUME_BASE (a real-mode address the
   FACS's waking vector names) and entered there in real mode when the
   machine wakes from S3. It prints "resumed", then exits through the
   debug-exit port with a code that is 0 only if the vCPU stopped at the
   PM1 write (the marker the suspending code set to 1 after it is still 0)
   and PM1_STS has WAK_STS (else +2) and RTC_STS (else +4). */
#include "s3.h"

  .text
  .code16
  .globl s3_resume_start, s3_resume_end
s3_resume_start:
  xorw %ax, %ax
  movw %ax, %ds
  movw $0x3f8, %dx
  .irp c, 'r', 'e', 's', 'u', 'm', 'e', 'd', '\n'
  movb $\c, %al
  outb %al, %dx
  .endr
  movl S3_MARKER, %ecx
  movw S3_PM1_EVT_PORT, %dx
  inw %dx, %ax
  xorl %ebx, %ebx
  testw $0x8000, %ax /* WAK_STS */
  jnz 1f
  orl $2, %ebx
1:
  testw $0x0400, %ax /* RTC_STS */
  jnz 2f
  orl $4, %ebx
2:
  orl %ecx, %ebx
  movl %ebx, %eax
  movw $0xf4, %dx
  outl %eax, %dx
3:
  hlt
  jmp 3b
s3_resume_end:

  .section .note.GNU-stack, "", @progbits
