/* The rows docs/hypercalls.md once left open, answered by a whole VM of two
 * vCPUs (both enter here, RSI = the CPU's number). CPU 0 checks each answer
 * and shuts down with the failing step's number (1-10) at the first one
 * that does not hold:
 *   1-2  mmu_update and mmuext_op with count 0 and a list outside RAM: 0;
 *   3-5  a kick CPU 1 sent is kept across a lock_wait that returned
 *        CHANGED and one refused (misaligned): the next lock_wait on an
 *        unchanged word returns KICKED at once (else CPU 0 sleeps for good);
 *   6-8  a multicall entry whose op has bit 32 set gets -ENOSYS and the
 *        next entry runs (a console write of "ok\n", result 3);
 *   9-10 multicall entries sched_op(yield_to 1) and flush_tlb_others(CPU 1,
 *        blocked) are accepted: one directed_yields and one
 *        tlb_flushes_deferred, each counted once;
 * then one multicall: shutdown(7), a console write of "after\n",
 * shutdown(300) (-EINVAL), yield and shutdown(9). The entries after the
 * first shutdown run, and the VM stops after the batch with code 7; had it
 * returned, CPU 0 shuts down with 11.
 * CPU 1 registers its run-state area, waits for CPU 0, kicks it
 * (lock_kick(0)) and blocks for good. */
#include "tiny.h"
#define MMU_UPDATE 1
#define MULTICALL 13
#define CONSOLE_IO 18
#define VCPU_OP 24
#define MMUEXT_OP 26
#define SCHED_OP 29
#define FLUSH_TLB_OTHERS 44
#define LOCK_WAIT 45
#define LOCK_KICK 46
#define VCPUOP_REGISTER_RUNSTATE_AREA 5
#define RUNSTATE_BLOCKED 2
#define LOCK_WAIT_KICKED 0
#define LOCK_WAIT_CHANGED 1
#define ENOSYS 38
#define EINVAL 22
#define OUTSIDE_RAM 0x400000000000
/* A multicall entry: {u64 op; u64 result; u64 args[6]}, result preset. */
#define ENTRY(op, a0, a1, a2) .quad op, 0x5555, a0, a1, a2, 0, 0, 0
#define FAIL_UNLESS_ZERO(step) \
  test %rax, %rax;             \
  jz 9f;                       \
  SHUTDOWN(step);              \
  9:

.globl _start
_start:
  test %rsi, %rsi
  jnz secondary
  movabs $OUTSIDE_RAM, %rdi
  xor %esi, %esi
  xor %edx, %edx
  HYPERCALL(MMU_UPDATE)
  FAIL_UNLESS_ZERO(1)
  movabs $OUTSIDE_RAM, %rdi
  xor %esi, %esi
  xor %edx, %edx
  HYPERCALL(MMUEXT_OP)
  FAIL_UNLESS_ZERO(2)

  movl $1, ready(%rip)
1:
  pause
  cmpl $0, kicked(%rip)
  je 1b
  lea word(%rip), %rdi              /* the word is 0: expecting 1 is CHANGED */
  mov $1, %esi
  HYPERCALL(LOCK_WAIT)
  cmp $LOCK_WAIT_CHANGED, %rax
  je 1f
  SHUTDOWN(3)
1:
  lea word+1(%rip), %rdi            /* misaligned: refused */
  xor %esi, %esi
  HYPERCALL(LOCK_WAIT)
  cmp $-EINVAL, %rax
  je 1f
  SHUTDOWN(4)
1:
  lea word(%rip), %rdi              /* unchanged: the kept kick */
  xor %esi, %esi
  HYPERCALL(LOCK_WAIT)
  cmp $LOCK_WAIT_KICKED, %rax
  je 1f
  SHUTDOWN(5)
1:
  lea bad_op(%rip), %rdi
  mov $2, %esi
  HYPERCALL(MULTICALL)
  FAIL_UNLESS_ZERO(6)
  cmpq $-ENOSYS, bad_op+8(%rip)
  je 1f
  SHUTDOWN(7)
1:
  cmpq $3, bad_op+64+8(%rip)
  je 1f
  SHUTDOWN(8)
1:
  pause                             /* CPU 1 blocked: its flush is deferred */
  cmpl $RUNSTATE_BLOCKED, runstate(%rip)
  jne 1b
  lea counted(%rip), %rdi
  mov $2, %esi
  HYPERCALL(MULTICALL)
  mov counted+8(%rip), %rax
  FAIL_UNLESS_ZERO(9)
  mov counted+64+8(%rip), %rax      /* no target kicked */
  FAIL_UNLESS_ZERO(10)
  lea shutdowns(%rip), %rdi
  mov $5, %esi
  HYPERCALL(MULTICALL)
  SHUTDOWN(11)

secondary:
  mov $VCPUOP_REGISTER_RUNSTATE_AREA, %edi
  mov $1, %esi
  lea runstate(%rip), %rdx
  HYPERCALL(VCPU_OP)
1:
  pause
  cmpl $0, ready(%rip)
  je 1b
  xor %edi, %edi
  HYPERCALL(LOCK_KICK)
  movl $1, kicked(%rip)
2:
  mov $1, %edi
  xor %esi, %esi
  HYPERCALL(SCHED_OP)               /* block: lasts until the VM stops */
  jmp 2b

.data
.balign 64
bad_op:
  ENTRY((1 << 32) | CONSOLE_IO, 0, 0, 0)
  ENTRY(CONSOLE_IO, 0, 3, ok)
counted:
  ENTRY(SCHED_OP, 3, 1, 0)
  ENTRY(FLUSH_TLB_OTHERS, 2, 0, 0)
shutdowns:
  ENTRY(SCHED_OP, 2, 7, 0)
  ENTRY(CONSOLE_IO, 0, 6, after)
  ENTRY(SCHED_OP, 2, 300, 0)
  ENTRY(SCHED_OP, 0, 0, 0)
  ENTRY(SCHED_OP, 2, 9, 0)
ok: .ascii "ok\n"
after: .ascii "after\n"
.balign 8
runstate: .quad 0
word: .long 0, 0
ready: .long 0
kicked: .long 0
