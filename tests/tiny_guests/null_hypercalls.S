/* COUNT console_io(write, 0 bytes) hypercalls, then shutdown(0). The
 * cheapest real hypercall: the bench's null round trip. The loop counter is
 * R12; nothing else is touched. With FRAMES > 0, RBP first points at a
 * chain of FRAMES frames (made-up return addresses), so that an exit site's
 * walk reads FRAMES frames at each exit (bench/instructions_per_exit.sh's
 * cost per frame); without, RBP stays 0 and the walk reads none. */
#include "tiny.h"
#ifndef FRAMES
#define FRAMES 0
#endif
.globl _start
_start:
#if FRAMES > 0
  lea chain(%rip), %rbp
  mov %rbp, %rax
  mov $FRAMES, %ecx
2:
  lea 16(%rax), %rbx
  mov %rbx, (%rax)
  mov %rcx, 8(%rax)                 /* a non-zero return address */
  mov %rbx, %rax
  dec %ecx
  jnz 2b
  movq $0, -16(%rax)
#endif
  mov $COUNT, %r12d
1:
  xor %edi, %edi
  xor %esi, %esi
  xor %edx, %edx
  HYPERCALL(18)
  dec %r12d
  jnz 1b
  SHUTDOWN(0)
#if FRAMES > 0
.data
.balign 16
chain: .fill 2 * FRAMES, 8, 0
#endif
