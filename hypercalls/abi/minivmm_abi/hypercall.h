/* Guest/host ABI version 1: hypercall transport, numbers and error codes.
 *
 * C-compatible and freestanding: included by the VMM (C++20) and by the guest
 * kernel (freestanding C++). Every value here is normative (docs/design.md).
 *
 * Transport: `out %eax, $MVMM_HYPERCALL_PORT` with the hypercall number in
 * EAX and arguments in RDI, RSI, RDX, R10, R8 (Xen x86-64 order). The result
 * comes back in RAX: >= 0 on success, a negative Linux errno on failure.
 * One hypercall is exactly one VM exit. Calls from CPL 3 get -MVMM_EPERM. */
#ifndef MINIVMM_ABI_HYPERCALL_H_
#define MINIVMM_ABI_HYPERCALL_H_

#include <stdint.h>

#define MVMM_ABI_VERSION 1u
#define MVMM_HYPERCALL_PORT 0xECu
#define MVMM_MAX_HYPERCALL_ARGS 5u

/* Hypercall numbers (Xen's where Xen has the call). The X-macro is the one
 * list both sides derive names and tables from: X(number, name). */
#define MVMM_HYPERCALL_LIST(X) \
  X(1, mmu_update)             \
  X(3, stack_switch)           \
  X(5, fpu_taskswitch)         \
  X(10, update_descriptor)     \
  X(13, multicall)             \
  X(15, set_timer_op)          \
  X(17, force_evtchn_callback) \
  X(18, console_io)            \
  X(24, vcpu_op)               \
  X(25, set_segment_base)      \
  X(26, mmuext_op)             \
  X(29, sched_op)              \
  X(40, set_if)                \
  X(41, write_cr0)             \
  X(42, report)                \
  X(43, send_ipi)              \
  X(44, flush_tlb_others)      \
  X(45, lock_wait)             \
  X(46, lock_kick)

/* Each hypercall's arguments, in register order (RDI, RSI, RDX, R10, R8 =
 * registers 0..4): MVMM_HC_ARGS_<name>(A) is A(register, kind, name) per
 * argument, where kind is `gpa` (a guest-physical address) or `u64`. The
 * VMM's typed readers (hypercalls/handlers/args.h) and docs/hypercalls.md's
 * `name(args)` cells derive from these; a number of MVMM_HYPERCALL_LIST
 * without its line here is a compile error in the VMM. */
#define MVMM_HC_ARGS_mmu_update(A) A(0, gpa, reqs) A(1, u64, count)
#define MVMM_HC_ARGS_stack_switch(A) A(0, u64, ss) A(1, u64, rsp)
#define MVMM_HC_ARGS_fpu_taskswitch(A) A(0, u64, set) A(1, u64, reason)
#define MVMM_HC_ARGS_update_descriptor(A) A(0, gpa, gpa) A(1, u64, desc)
#define MVMM_HC_ARGS_multicall(A) A(0, gpa, list) A(1, u64, count)
#define MVMM_HC_ARGS_set_timer_op(A) A(0, u64, deadline_ns)
#define MVMM_HC_ARGS_force_evtchn_callback(A)
#define MVMM_HC_ARGS_console_io(A) A(0, u64, cmd) A(1, u64, count) A(2, gpa, buffer)
#define MVMM_HC_ARGS_vcpu_op(A) A(0, u64, cmd) A(1, u64, vcpu) A(2, u64, arg)
#define MVMM_HC_ARGS_set_segment_base(A) A(0, u64, which) A(1, u64, base)
#define MVMM_HC_ARGS_mmuext_op(A) A(0, gpa, ops) A(1, u64, count)
#define MVMM_HC_ARGS_sched_op(A) A(0, u64, cmd) A(1, u64, arg)
#define MVMM_HC_ARGS_set_if(A) A(0, u64, enable)
#define MVMM_HC_ARGS_write_cr0(A) A(0, u64, value)
#define MVMM_HC_ARGS_report(A) A(0, gpa, text) A(1, u64, len)
#define MVMM_HC_ARGS_send_ipi(A) A(0, u64, mask) A(1, u64, vector)
#define MVMM_HC_ARGS_flush_tlb_others(A) A(0, u64, mask)
#define MVMM_HC_ARGS_lock_wait(A) A(0, gpa, word) A(1, u64, expected)
#define MVMM_HC_ARGS_lock_kick(A) A(0, u64, cpu)

enum mvmm_hypercall_nr {
#define MVMM_HC_ENUM_(nr, name) MVMM_HC_##name = nr,
  MVMM_HYPERCALL_LIST(MVMM_HC_ENUM_)
#undef MVMM_HC_ENUM_
  /* Numbers [MVMM_HC_USER_FIRST, MVMM_HC_USER_LAST] are left free for
   * hypercalls that an embedding program registers (docs/API.md). */
  MVMM_HC_USER_FIRST = 64,
  MVMM_HC_USER_LAST = 127,
  MVMM_HC_MAX = 128 /* exclusive upper bound of all numbers */
};

/* Errors, as negative values in RAX (Linux errno numbers). */
#define MVMM_EPERM 1
#define MVMM_ENOENT 2
#define MVMM_E2BIG 7
#define MVMM_EFAULT 14
#define MVMM_EINVAL 22
#define MVMM_ENOSYS 38

/* console_io(cmd, count, buffer) */
#define MVMM_CONSOLEIO_WRITE 0u
#define MVMM_CONSOLEIO_MAX_BYTES 4096u /* longer writes get -E2BIG */

/* set_segment_base(which, base): the caller's 64-bit segment base (Xen's
 * HYPERVISOR_set_segment_base, what Linux's wrmsr(MSR_FS_BASE) becomes on
 * Xen PV). Only SEGBASE_FS: the FS base, as the next use of %fs sees it. */
#define MVMM_SEGBASE_FS 0u

/* sched_op(cmd, arg) */
#define MVMM_SCHEDOP_YIELD 0u
/* block: returns once an interrupt is pending, without changing IF and
 * without delivering it; the guest then sets IF (set_if(1)) to take it. So
 * `block; set_if(1)` has no lost-wakeup window, like Xen's SCHEDOP_block.
 * Another vCPU's send_ipi or one of the caller's own timers ends it. When every vCPU
 * is blocked or halted and nothing can ever wake any of them (no timer
 * armed, no interrupt pending) the VM stops as "halted forever". */
#define MVMM_SCHEDOP_BLOCK 1u
#define MVMM_SCHEDOP_SHUTDOWN 2u /* arg: exit code 0..255 */
/* yield_to: a directed yield to vCPU `arg` (KVM_HC_SCHED_YIELD), which the
 * guest believes holds a lock it waits for. -EINVAL for arg >= the vCPU count
 * or the caller itself. The VMM yields the host thread (sched_yield) like
 * MVMM_SCHEDOP_YIELD: it cannot choose which host thread runs next, it only
 * counts the yield (cause `yield`). */
#define MVMM_SCHEDOP_YIELD_TO 3u

/* set_timer_op(deadline_ns): arms the calling vCPU's own one-shot timer at
 * guest time `deadline_ns` (0 cancels it; a past deadline fires at once). It
 * interrupts that vCPU only. */

/* vcpu_op(cmd, vcpu, arg): register_vcpu_info makes the 64-byte-aligned
 * struct mvmm_vcpu_info (boot.h) at guest-physical `arg` vCPU `vcpu`'s shared
 * interrupt flag, once per vCPU (Xen's VCPUOP_register_vcpu_info, with the
 * address passed directly). */
#define MVMM_VCPUOP_REGISTER_VCPU_INFO 10u
/* register_runstate_area makes the 8-byte-aligned struct mvmm_vcpu_runstate
 * (boot.h) at `arg` vCPU `vcpu`'s run state, once per vCPU (Xen's
 * VCPUOP_register_runstate_memory_area, with the address passed directly).
 * `vcpu` must be the calling vCPU in both commands. */
#define MVMM_VCPUOP_REGISTER_RUNSTATE_AREA 5u
/* vcpu_op(set_periodic_timer, vcpu, period_ns): the calling vCPU's periodic
 * timer interrupts it (MVMM_TIMER_VECTOR) every `period_ns` from now on,
 * replacing its previous period (on CPU 0 also the one boot_info.timer_hz
 * started). vcpu_op(stop_periodic_timer, vcpu, 0) stops it (the third
 * argument is ignored). Xen's VCPUOP_set_periodic_timer and
 * VCPUOP_stop_periodic_timer, with the period passed directly. -EINVAL,
 * nothing changed, for `vcpu` not the calling vCPU (as Xen) or a period
 * outside [MVMM_PERIODIC_TIMER_MIN_NS, MVMM_PERIODIC_TIMER_MAX_NS]; -ENOSYS
 * when the VMM has no timer for that vCPU. */
#define MVMM_VCPUOP_SET_PERIODIC_TIMER 6u
#define MVMM_VCPUOP_STOP_PERIODIC_TIMER 7u
#define MVMM_PERIODIC_TIMER_MIN_NS 1000000ull       /* 1 ms, Xen's minimum */
#define MVMM_PERIODIC_TIMER_MAX_NS 3600000000000ull /* 1 hour */

/* force_evtchn_callback(): no arguments (ignored), returns 0. Xen's
 * xen_version hypercall, which Linux's xen_force_evtchn_callback issues to
 * get a pending event delivered after it cleared evtchn_upcall_mask; here it
 * is that and nothing else. -EINVAL before vcpu_op registered a vcpu_info. */

/* send_ipi(mask, vector): makes `vector` (MVMM_IPI_VECTOR, boot.h, the only
 * one) pending on every vCPU n whose bit n is set in `mask`, the caller's own
 * bit included; returns the number of vCPUs targeted. A running target is
 * kicked out of the guest, a blocked one woken; the vector is injected like
 * the timer's (RFLAGS.IF, the vcpu_info mask). One already pending on a
 * target merges with it, as an APIC's IRR bit does. -EINVAL, nothing
 * delivered, for an empty mask, a bit at or above the VM's vCPU count or
 * another vector (docs/hypercalls.md). */
/* flush_tlb_others(mask): KVM's paravirtual TLB flush, decided by the VMM.
 * For each vCPU n in `mask` (never the caller's own: flush locally) the VMM
 * sets MVMM_RUNSTATE_FLUSH_TLB in n's registered run-state area (boot.h);
 * a target that is running also gets MVMM_IPI_VECTOR, and its handler
 * flushes; a blocked or halted one is not woken and flushes when it next
 * runs. Returns the number of targets kicked (running); the others are
 * deferred. -EINVAL, nothing changed, for an empty mask, a bit at or above
 * the vCPU count, the caller's own bit or a target with no run-state area. */

/* lock_wait(word, expected): a paravirtual spinlock's waiter sleeps (KVM's
 * kvm_wait, Xen's SCHEDOP_poll). Under the VMM's big lock, in this order:
 * the u32 at `word` differs from `expected` (the lock was released):
 * returns MVMM_LOCK_WAIT_CHANGED at once; a kick (lock_kick) arrived since
 * the caller's last lock_wait: it is consumed, returns MVMM_LOCK_WAIT_KICKED
 * at once; an interrupt is pending on the caller: returns
 * MVMM_LOCK_WAIT_INTERRUPT at once; otherwise the vCPU sleeps (run state
 * BLOCKED) until a kick (MVMM_LOCK_WAIT_KICKED, consumed) or an interrupt
 * (MVMM_LOCK_WAIT_INTERRUPT) arrives, or the VM stops. The check and the
 * sleep are atomic with respect to lock_kick: no lost wake-up. -EINVAL for a
 * `word` not 4-byte aligned or `expected` above 0xFFFFFFFF, -EFAULT for a
 * `word` outside RAM, -EINVAL as a multicall entry (it may sleep: one exit of
 * its own), -ENOSYS without a vCPU directory. */
#define MVMM_LOCK_WAIT_KICKED 0
#define MVMM_LOCK_WAIT_CHANGED 1
#define MVMM_LOCK_WAIT_INTERRUPT 2
/* lock_kick(cpu): makes a kick pending on vCPU `cpu` and wakes it if it
 * sleeps in lock_wait (KVM_HC_KICK_CPU). Kicks do not queue: one pending
 * merges with the next. Returns 0. -EINVAL for cpu >= the vCPU count or the
 * caller itself, -ENOSYS without a vCPU directory. */

/* report(text, len): UTF-8 `key=value` lines. */
#define MVMM_REPORT_MAX_BYTES 16384u

/* multicall(list, count) */
#define MVMM_MULTICALL_MAX_ENTRIES 512u
struct mvmm_multicall_entry {
  uint64_t op;      /* hypercall number; a nested multicall gets -EINVAL */
  uint64_t result;  /* written back by the VMM, nothing else is written */
  uint64_t args[6]; /* args[0..4] are RDI, RSI, RDX, R10, R8 */
};

/* mmu_update(reqs, count): write the PTE at guest-physical `ptr`
 * (8-aligned, in RAM) with `val`; a present `val` may map guest RAM only. */
#define MVMM_MMU_UPDATE_MAX_REQS 512u
struct mvmm_mmu_update {
  uint64_t ptr;
  uint64_t val;
};

/* mmuext_op(ops, count): Xen's extended MMU operations, an array of
 * `struct mvmm_mmuext_op` plus a count. The only command is
 * MVMM_MMUEXT_NEW_BASEPTR (Xen's value): load the page-table base (CR3) with
 * the page whose frame number is `arg1` (guest-physical address >> 12);
 * `arg2` and `reserved` must be 0. All or nothing: the whole batch is
 * checked before any operation runs (docs/hypercalls.md). */
#define MVMM_MMUEXT_NEW_BASEPTR 5u
#define MVMM_MMUEXT_OP_MAX_OPS 512u
struct mvmm_mmuext_op {
  uint32_t cmd;
  uint32_t reserved; /* 0 (the padding of Xen's `unsigned int cmd`) */
  uint64_t arg1;     /* NEW_BASEPTR: the frame number of the new top-level table */
  uint64_t arg2;     /* NEW_BASEPTR: 0 */
};

/* write_cr0: only these bits may change. */
#define MVMM_CR0_MP (1ull << 1)
#define MVMM_CR0_EM (1ull << 2)
#define MVMM_CR0_TS (1ull << 3)
/* fpu_taskswitch(0, reason): why TS is cleared. The #NM handler clears it
 * because the FPU is about to be used; the VMM's wasted-exit analysis tells
 * a used TS set from a cancelled one by it. */
#define MVMM_TS_CLEAR_PLAIN 0u
#define MVMM_TS_CLEAR_FOR_NM 1u
#define MVMM_CR0_GUEST_WRITABLE (MVMM_CR0_MP | MVMM_CR0_EM | MVMM_CR0_TS)

#define MVMM_RFLAGS_IF (1ull << 9)

#ifdef __cplusplus
static_assert(sizeof(struct mvmm_multicall_entry) == 64, "multicall entry is 64 bytes");
static_assert(__builtin_offsetof(struct mvmm_multicall_entry, result) == 8, "abi");
static_assert(__builtin_offsetof(struct mvmm_multicall_entry, args) == 16, "abi");
static_assert(sizeof(struct mvmm_mmu_update) == 16, "mmu_update request is 16 bytes");
static_assert(sizeof(struct mvmm_mmuext_op) == 24, "mmuext_op is 24 bytes");
static_assert(__builtin_offsetof(struct mvmm_mmuext_op, arg1) == 8, "abi");
#else
_Static_assert(sizeof(struct mvmm_multicall_entry) == 64, "multicall entry is 64 bytes");
_Static_assert(sizeof(struct mvmm_mmu_update) == 16, "mmu_update request is 16 bytes");
_Static_assert(sizeof(struct mvmm_mmuext_op) == 24, "mmuext_op is 24 bytes");
#endif

#endif /* MINIVMM_ABI_HYPERCALL_H_ */
