/* Boot entry, trap entry/exit, the stack switch and small SSE helpers.
 * Everything here runs in ring 0 except the .user_text helpers. */

#define TRAP_NOERR(n) trap_##n: pushq $0; pushq $n; jmp trap_common
#define TRAP_ERR(n) trap_##n: pushq $n; jmp trap_common

  .section .text.boot, "ax"
  .globl _start
  .type _start, @function
/* Entered by the VMM in 64-bit mode (docs/design.md "Boot"): RDI = boot_info gpa,
 * RSI = CPU number, RSP = that CPU's VMM stack, IF = 0. Every CPU starts here
 * at once; a secondary CPU (RSI != 0) stays on its VMM stack and must not
 * touch BSS, which the boot CPU is about to zero (kernel/smp.cc). */
_start:
  cli
  cld
  test %rsi, %rsi
  jnz 2f
  mov %rdi, %r12
  /* Zero BSS with one rep stosq: every ring-0 instruction is emulated, so a
   * C loop would cost ~10x more. The linker script 8-aligns both ends. */
  lea __bss_start(%rip), %rdi
  lea __bss_end(%rip), %rcx
  sub %rdi, %rcx
  shr $3, %rcx
  xor %eax, %eax
  rep stosq
  lea boot_stack_top(%rip), %rsp
  xor %ebp, %ebp
  mov %r12, %rdi
  call KernelMain
1:
  ud2
  jmp 1b
2:
  xor %ebp, %ebp
  call ApMain                      /* (boot_info, cpu) */
  jmp 1b

  .text
/* Exception stubs: vectors with a CPU error code push only the vector. */
TRAP_NOERR(0)
TRAP_NOERR(1)
TRAP_NOERR(2)
TRAP_NOERR(3)
TRAP_NOERR(4)
TRAP_NOERR(5)
TRAP_NOERR(6)
TRAP_NOERR(7)
TRAP_ERR(8)
TRAP_NOERR(9)
TRAP_ERR(10)
TRAP_ERR(11)
TRAP_ERR(12)
TRAP_ERR(13)
TRAP_ERR(14)
TRAP_NOERR(15)
TRAP_NOERR(16)
TRAP_ERR(17)
TRAP_NOERR(18)
TRAP_NOERR(19)
TRAP_NOERR(20)
TRAP_ERR(21)
TRAP_NOERR(22)
TRAP_NOERR(23)
TRAP_NOERR(24)
TRAP_NOERR(25)
TRAP_NOERR(26)
TRAP_NOERR(27)
TRAP_NOERR(28)
TRAP_ERR(29)
TRAP_ERR(30)
TRAP_NOERR(31)
TRAP_NOERR(32)   /* timer, MVMM_TIMER_VECTOR */
TRAP_NOERR(33)   /* IPI, MVMM_IPI_VECTOR */
TRAP_NOERR(128)  /* int 0x80 system call, where the host delivers it */

/* Builds a TrapFrame (arch/trap.h) and calls TrapDispatch(frame). The CPU
 * 16-aligns RSP before pushing its frame; 7 + 15 quadwords keep it aligned. */
trap_common:
  push %rax
  push %rbx
  push %rcx
  push %rdx
  push %rsi
  push %rdi
  push %rbp
  push %r8
  push %r9
  push %r10
  push %r11
  push %r12
  push %r13
  push %r14
  push %r15
  mov %rsp, %rdi
  cld
  call TrapDispatch
  .globl trap_return
trap_return:
  pop %r15
  pop %r14
  pop %r13
  pop %r12
  pop %r11
  pop %r10
  pop %r9
  pop %r8
  pop %rbp
  pop %rdi
  pop %rsi
  pop %rdx
  pop %rcx
  pop %rbx
  pop %rax
  add $16, %rsp
  iretq

  .section .rodata
  .globl trap_stub_table
  .balign 8
/* Stub addresses for vectors 0..33 (arch/idt.cc installs them). */
trap_stub_table:
  .quad trap_0, trap_1, trap_2, trap_3, trap_4, trap_5, trap_6, trap_7
  .quad trap_8, trap_9, trap_10, trap_11, trap_12, trap_13, trap_14, trap_15
  .quad trap_16, trap_17, trap_18, trap_19, trap_20, trap_21, trap_22, trap_23
  .quad trap_24, trap_25, trap_26, trap_27, trap_28, trap_29, trap_30, trap_31
  .quad trap_32, trap_33
  .globl trap_stub_syscall
trap_stub_syscall:
  .quad trap_128

  .text
/* void SwitchStacks(uint64_t* save_rsp, uint64_t next_rsp)
 * Saves RFLAGS and the callee-saved registers on the current stack, parks its
 * RSP in *save_rsp and resumes the task whose stack is next_rsp. RFLAGS goes
 * with the task because under pvops irq:shared RFLAGS.IF is not the
 * interrupt flag and no restore_fl sets it: a task that switched away inside
 * a gate (IF=0) must come back with IF=0, one that switched away from task
 * context with IF=1. Elsewhere IF is 0 at every switch (Schedule holds
 * irqsave), so this changes nothing there. */
  .globl SwitchStacks
  .type SwitchStacks, @function
SwitchStacks:
  pushfq
  push %rbp
  push %rbx
  push %r12
  push %r13
  push %r14
  push %r15
  mov %rsp, (%rdi)
  mov %rsi, %rsp
  pop %r15
  pop %r14
  pop %r13
  pop %r12
  pop %rbx
  pop %rbp
  popfq
  ret

/* First instruction of every new task (kernel/sched.cc builds the stack):
 * rbx = 1 for a user task (RSP then points at its TrapFrame), else
 * r12 = function, r13 = argument of the kernel thread. */
  .globl task_entry
task_entry:
  call TaskBootstrap
  test %rbx, %rbx
  jnz 1f
  mov %r13, %rdi
  call *%r12
  call TaskExitCurrent
  ud2
1:
  jmp trap_return

/* uint64_t pte_val(uint64_t) behind a callee-save thunk (Linux PVOP_CALLEE):
 * the call site clobbers only RAX, so the thunk saves every other register
 * the C function may use. One thunk per backend: PteValCalleeThunk (native,
 * the identity) and XenPteValCalleeThunk (pv, the m2p translation). */
.macro PTE_VAL_CALLEE_THUNK name, body
  .globl \name
\name:
  push %rcx
  push %rdx
  push %rsi
  push %rdi
  push %r8
  push %r9
  push %r10
  push %r11
  call \body
  pop %r11
  pop %r10
  pop %r9
  pop %r8
  pop %rdi
  pop %rsi
  pop %rdx
  pop %rcx
  ret
.endm

PTE_VAL_CALLEE_THUNK PteValCalleeThunk, PteValC
PTE_VAL_CALLEE_THUNK XenPteValCalleeThunk, XenPteValC

/* SSE register file helpers: moves only (docs/hosts.md: SSE arithmetic and
 * movq fail in emulated ring 0). 8 registers x 16 bytes. */
  .globl SseLoad8
SseLoad8:
  movdqu 0(%rdi), %xmm0
  movdqu 16(%rdi), %xmm1
  movdqu 32(%rdi), %xmm2
  movdqu 48(%rdi), %xmm3
  movdqu 64(%rdi), %xmm4
  movdqu 80(%rdi), %xmm5
  movdqu 96(%rdi), %xmm6
  movdqu 112(%rdi), %xmm7
  ret
  .globl SseStore8
SseStore8:
  movdqu %xmm0, 0(%rdi)
  movdqu %xmm1, 16(%rdi)
  movdqu %xmm2, 32(%rdi)
  movdqu %xmm3, 48(%rdi)
  movdqu %xmm4, 64(%rdi)
  movdqu %xmm5, 80(%rdi)
  movdqu %xmm6, 96(%rdi)
  movdqu %xmm7, 112(%rdi)
  ret

/* The same for ring 3: user pages only hold .user_* sections. */
  .section .user_text, "ax"
  .globl UserSseLoad8
UserSseLoad8:
  movdqu 0(%rdi), %xmm0
  movdqu 16(%rdi), %xmm1
  movdqu 32(%rdi), %xmm2
  movdqu 48(%rdi), %xmm3
  movdqu 64(%rdi), %xmm4
  movdqu 80(%rdi), %xmm5
  movdqu 96(%rdi), %xmm6
  movdqu 112(%rdi), %xmm7
  ret
  .globl UserSseStore8
UserSseStore8:
  movdqu %xmm0, 0(%rdi)
  movdqu %xmm1, 16(%rdi)
  movdqu %xmm2, 32(%rdi)
  movdqu %xmm3, 48(%rdi)
  movdqu %xmm4, 64(%rdi)
  movdqu %xmm5, 80(%rdi)
  movdqu %xmm6, 96(%rdi)
  movdqu %xmm7, 112(%rdi)
  ret

  .section .bss
  .balign 16
  .globl boot_stack_bottom
boot_stack_bottom:
  .skip 16384
  .globl boot_stack_top
boot_stack_top:

  .section .note.GNU-stack, "", @progbits
