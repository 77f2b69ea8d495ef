/* The multicall benchmark's guest (bench/multicall_bench.cc). It asks the
 * host what to do next with user hypercall 64 ("bench_next"), which returns
 * 0 (shut down) or a phase word: bits 0-15 N (1..64), bits 16-31 R (reps),
 * bit 32 the mode. Mode 0: R x N single stack_switch hypercalls; mode 1:
 * R multicalls of the first N entries of `list` (each a stack_switch). So
 * a phase costs R x N exits or R exits, and the host times it between two
 * bench_next calls. Registers: R12 N, R13 R, R14/R15 loop counters, RCX scratch. */
#include "tiny.h"
#define BENCH_NEXT 64
#define KERNEL_DS 0x10
#define RSP0 0x70000

.globl _start
_start:
next:
  HYPERCALL(BENCH_NEXT)
  test %rax, %rax
  jz done
  movzwl %ax, %r12d
  mov %rax, %r13
  shr $16, %r13
  movzwl %r13w, %r13d
  mov %rax, %rcx
  shr $32, %rcx
  test %ecx, %ecx
  jnz multi

  mov %r13d, %r14d
1:
  mov %r12d, %r15d
2:
  mov $KERNEL_DS, %edi
  mov $RSP0, %esi
  HYPERCALL(3)
  dec %r15d
  jnz 2b
  dec %r14d
  jnz 1b
  jmp next

multi:
  mov %r13d, %r14d
3:
  lea list(%rip), %rdi
  mov %r12, %rsi
  HYPERCALL(13)
  dec %r14d
  jnz 3b
  jmp next

done:
  SHUTDOWN(0)

/* 64 multicall entries {op, result, args[6]}: stack_switch(KERNEL_DS, RSP0). */
.balign 64
list:
.rept 64
  .quad 3, 0, KERNEL_DS, RSP0, 0, 0, 0, 0
.endr
