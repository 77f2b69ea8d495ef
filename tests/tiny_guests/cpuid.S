/* What CPUID tells each vCPU. Every CPU enters here at once, RSI = its
 * number, and writes what it read, 4 bytes at a time, to port 0x80 (no
 * device: each write is one unclaimed port exit, which the run's recent
 * exits keep with its bytes):
 *   leaf 1 EBX (the initial APIC ID in bits 31:24), ECX, EDX;
 *   leaf 0's EAX, the highest basic leaf;
 *   when that is 0xB or more, leaf 0xB subleaf 0's EDX (the x2APIC ID).
 * Then CPU 0 waits until every CPU has written and shuts down with code 0;
 * the others spin, with no more exits. */
#include "tiny.h"
#define BOOT_INFO_NR_CPUS 80
#define PORT 0x80

.globl _start
_start:
  mov %rsi, %r12                    /* this CPU */
  mov BOOT_INFO_NR_CPUS(%rdi), %r13d
  xor %eax, %eax
  xor %ecx, %ecx
  cpuid
  mov %eax, %r14d                   /* the highest basic leaf */
  mov $1, %eax
  xor %ecx, %ecx
  cpuid
  mov %ecx, %r8d
  mov %edx, %r9d
  mov %ebx, %eax
  out %eax, $PORT
  mov %r8d, %eax
  out %eax, $PORT
  mov %r9d, %eax
  out %eax, $PORT
  mov %r14d, %eax
  out %eax, $PORT
  cmp $0xb, %r14d
  jb 1f
  mov $0xb, %eax
  xor %ecx, %ecx
  cpuid
  mov %edx, %eax
  out %eax, $PORT
1:
  lock incl written(%rip)
  test %r12, %r12
  jnz spin
2:
  cmp written(%rip), %r13d
  je 3f
  pause
  jmp 2b
3:
  SHUTDOWN(0)
spin:
  pause
  jmp spin

.data
.balign 4
written:
  .long 0
