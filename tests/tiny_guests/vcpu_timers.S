/* Per-vCPU timers on several vCPUs. Every CPU loads one shared IDT whose
 * vector 0x20 handler counts in R13 (a register of its own CPU) and returns.
 * CPU 0 releases the others and halts with interrupts off for good (HLT with
 * IF=0: nothing but the VM's stop ends it). Each secondary CPU n, with
 * interrupts off throughout except to take one:
 *   1. set_timer_op(1): its own one-shot, already due; takes it;
 *   2. vcpu_op(set_periodic_timer, 0, 1 ms) must fail with -EINVAL (not its
 *      own vCPU), or the CPU executes ud2 (no IDT entry: a triple fault);
 *   3. vcpu_op(set_periodic_timer, n, 1 ms); takes ticks until R13 >= 1 +
 *      TICKS; vcpu_op(stop_periodic_timer, n, 0);
 *   (to take one: sched_op(block), which returns once one is pending, then
 *   set_if(1), which lets it in, then cli; more may come in before the cli,
 *   and the handler counts them too)
 *   4. report("vt.cpuN.ticks=<count>"): the interrupts its handler counted;
 *   5. the last CPU (nr_cpus - 1) waits until every other secondary CPU has
 *      reported and shuts down with code 0; the others halt with IF=0.
 * While a secondary CPU blocks, CPU 0 is halted for good: only that CPU's
 * own timer can wake it, and the run must not stop as "halted forever".
 * Needs 2 to 9 vCPUs and no --timer-hz. */
#include "tiny.h"
#define SET_TIMER_OP 15
#define VCPU_OP 24
#define SCHED_OP 29
#define SET_IF 40
#define REPORT 42
#define VCPUOP_SET_PERIODIC_TIMER 6
#define VCPUOP_STOP_PERIODIC_TIMER 7
#define PERIOD_NS 1000000
#define TICKS 5
#define EINVAL 22
#define BOOT_INFO_NR_CPUS 80
#define KEY_LEN 14 /* "vt.cpuN.ticks=" */

.globl _start
_start:
  mov %rsi, %r12                    /* this CPU */
  mov BOOT_INFO_NR_CPUS(%rdi), %r15d
  xor %r13d, %r13d                  /* timer interrupts taken */
  test %r12, %r12
  jnz secondary
  IDT_GATE(idt, 0x20, timer_handler)
  lidt idtr(%rip)
  movl $1, released(%rip)
halt:
  cli
  hlt
  jmp halt

secondary:
  cmpl $0, released(%rip)
  jne 1f
  pause
  jmp secondary
1:
  lidt idtr(%rip)

  mov $1, %edi
  HYPERCALL(SET_TIMER_OP)           /* its own one-shot, already due */
  call take_one

  mov $VCPUOP_SET_PERIODIC_TIMER, %edi
  xor %esi, %esi                    /* vCPU 0: not this one */
  mov $PERIOD_NS, %edx
  HYPERCALL(VCPU_OP)
  cmp $-EINVAL, %rax
  jne fault

  mov $VCPUOP_SET_PERIODIC_TIMER, %edi
  mov %r12, %rsi
  mov $PERIOD_NS, %edx
  HYPERCALL(VCPU_OP)
  test %rax, %rax
  jnz fault
2:
  call take_one
  cmp $(1 + TICKS), %r13d
  jb 2b
  mov $VCPUOP_STOP_PERIODIC_TIMER, %edi
  mov %r12, %rsi
  xor %edx, %edx
  HYPERCALL(VCPU_OP)
  test %rax, %rax
  jnz fault

  /* The line "vt.cpuN.ticks=D...\n" in this CPU's own buffer, the count
   * (below 1000) in decimal without leading zeros. */
  lea line(%rip), %rsi
  lea buffers(%rip), %rdi
  mov %r12, %rax
  shl $5, %rax
  add %rax, %rdi                    /* buffers + 32 * cpu */
  mov %rdi, %rbx
  mov $KEY_LEN, %ecx
  rep movsb                         /* RDI: where the digits go */
  lea '0'(%r12), %eax
  mov %al, 6(%rbx)
  mov %r13d, %eax
  xor %r8d, %r8d                    /* a digit written yet */
  mov $'0', %ecx
3:
  cmp $100, %eax
  jb 4f
  sub $100, %eax
  inc %ecx
  jmp 3b
4:
  cmp $'0', %ecx
  je 5f
  mov %cl, (%rdi)
  inc %rdi
  inc %r8d
5:
  mov $'0', %ecx
6:
  cmp $10, %eax
  jb 7f
  sub $10, %eax
  inc %ecx
  jmp 6b
7:
  test %r8d, %r8d
  jnz 8f
  cmp $'0', %ecx
  je 9f
8:
  mov %cl, (%rdi)
  inc %rdi
9:
  add $'0', %eax
  mov %al, (%rdi)
  movb $10, 1(%rdi)                 /* '\n' */
  lea 2(%rdi), %rsi
  sub %rbx, %rsi                    /* length */
  mov %rbx, %rdi
  HYPERCALL(REPORT)
  test %rax, %rax
  js fault

  lea done(%rip), %rdx
  movl $1, (%rdx,%r12,4)
  lea -1(%r15), %eax
  cmp %eax, %r12d
  jne halt
  /* The last CPU: wait for every secondary CPU before it. */
  mov $1, %ecx
10:
  cmp %eax, %ecx
  jae 12f
  cmpl $0, (%rdx,%rcx,4)
  jne 11f
  pause
  jmp 10b
11:
  inc %ecx
  jmp 10b
12:
  SHUTDOWN(0)
  jmp halt

fault:
  ud2

/* Blocks until an interrupt is pending, lets it in, closes again. */
take_one:
  mov $1, %edi
  xor %esi, %esi
  HYPERCALL(SCHED_OP)               /* sched_op(block) */
  mov $1, %edi
  HYPERCALL(SET_IF)                 /* set_if(1): delivered at the next entry */
  cli
  ret

timer_handler:
  inc %r13d
  iretq

line:
  .ascii "vt.cpuN.ticks="

.data
.balign 16
idtr:
  .word 0x21*16 - 1
  .quad idt
.balign 16
idt:
  .fill 0x21*16, 1, 0
.balign 8
released:
  .long 0
  .long 0
done:
  .fill 32 * 4, 1, 0
buffers:
  .fill 32 * 32, 1, 0
