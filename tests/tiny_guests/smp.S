/* Several vCPUs. Every CPU enters here at once, RSI = its number, on its own
 * stack. CPU 0 releases the others, which then register their runstate area
 * (vcpu_op) and block for good (sched_op(block)): two exits each. The first
 * byte of the command line picks the rest:
 *   's': CPU 0 waits until every other CPU is idle, then shuts down with
 *        exit code nr_cpus - 1;
 *   'f': the last CPU, instead of idling, waits until every other secondary
 *        CPU is idle and triple-faults (no IDT): one exit; CPU 0 spins (with
 *        one CPU, CPU 0 is the last and faults at once);
 *   'S': as 'f', but the last CPU shuts down with exit code nr_cpus - 1
 *        (one exit, the sched_op) instead of faulting;
 *   in 'f' and 'S' the last CPU first puts its GDTR (sgdt, no exit) in R15
 *   (base) and R14 (limit), so the stop's register dump shows the GDT it
 *   was given (after a triple fault some KVMs dump a reset vCPU);
 *   else: CPU 0 waits until every other CPU is idle, says so with one
 *        sched_op(yield) (an exit an observer sees) and spins with no more
 *        exits: only the timeout or a stop request ends the run. */
#include "tiny.h"
#define VCPU_OP 24
#define SCHED_OP 29
#define VCPUOP_REGISTER_RUNSTATE_AREA 5
#define RUNSTATE_BLOCKED 2
#define BOOT_INFO_NR_CPUS 80
#define CMDLINE_GPA 0x2000

.globl _start
_start:
  mov %rsi, %r12                    /* this CPU */
  mov BOOT_INFO_NR_CPUS(%rdi), %r13d
  movzbl CMDLINE_GPA, %r14d
  test %r12, %r12
  jnz secondary
  movl $1, released(%rip)
  cmp $'f', %r14d
  je 0f
  cmp $'S', %r14d
  jne 1f
0:
  cmp $1, %r13d
  je last                           /* one CPU: CPU 0 is the last */
  jmp spin
1:
  call wait_idle
  cmp $'s', %r14d
  je 2f
  xor %edi, %edi
  HYPERCALL(SCHED_OP)               /* yield: every other CPU is idle */
  jmp spin
2:
  mov $2, %edi
  lea -1(%r13), %esi
  HYPERCALL(SCHED_OP)               /* shutdown(nr_cpus - 1) */
spin:
  pause
  jmp spin

secondary:
  cmpl $0, released(%rip)
  jne 1f
  pause
  jmp secondary
1:
  cmp $'f', %r14d
  je 0f
  cmp $'S', %r14d
  jne 2f
0:
  lea -1(%r13), %eax
  cmp %eax, %r12d
  jne 2f
  call wait_idle
last:
  sub $16, %rsp
  sgdt (%rsp)
  mov 2(%rsp), %r15                 /* GDTR base */
  movzwl (%rsp), %eax               /* GDTR limit */
  cmpb $'S', CMDLINE_GPA
  mov %rax, %r14
  jne fault
  mov $2, %edi
  lea -1(%r13), %esi
  HYPERCALL(SCHED_OP)               /* shutdown(nr_cpus - 1) from the last CPU */
  jmp spin
fault:
  ud2
2:
  mov $VCPUOP_REGISTER_RUNSTATE_AREA, %edi
  mov %r12, %rsi
  lea runstates(%rip), %rdx
  lea (%rdx,%r12,8), %rdx
  HYPERCALL(VCPU_OP)
3:
  mov $1, %edi
  xor %esi, %esi
  HYPERCALL(SCHED_OP)               /* block: lasts until the VM stops */
  jmp 3b

/* Waits until each CPU in 1 .. nr_cpus - 1 other than this one is idle. */
wait_idle:
  mov $1, %ecx
  lea runstates(%rip), %rdx
1:
  cmp %r13d, %ecx
  jae 4f
  cmp %r12d, %ecx
  je 3f
2:
  cmpl $RUNSTATE_BLOCKED, (%rdx,%rcx,8)
  je 3f
  pause
  jmp 2b
3:
  inc %ecx
  jmp 1b
4:
  ret

.data
.balign 8
released:
  .long 0
  .long 0
runstates:
  .fill 32 * 8, 1, 0
