/* Guest/host ABI version 1: boot protocol, memory map, GDT, devices.
 *
 * The VMM loads the guest ELF's PT_LOAD segments at their p_paddr (>= 1 MiB)
 * and enters it in 64-bit mode: CPL 0, paging on with an identity map of all
 * guest RAM (2 MiB pages) plus the GDT page, CR0 = PE|MP|ET|NE|WP|PG,
 * CR4 = PAE|OSFXSR|OSXMMEXCPT, EFER = LME|LMA|SCE|NXE, RFLAGS = 0x2,
 * CS = 0x08, DS/ES/SS = 0x10, TR = 0x28, RDI = MVMM_BOOT_INFO_GPA.
 *
 * Every vCPU (boot_info.nr_cpus of them, 1 to MVMM_MAX_CPUS) enters at the
 * same entry point at the same time, in that same state except for:
 *   RSI = its CPU number (0 for the boot CPU),
 *   RSP = MVMM_CPU_STACK_TOP(cpu): a stack of its own below 1 MiB,
 *   GDTR base = MVMM_CPU_GDT_GPA(cpu): a GDT of its own (limit
 *     MVMM_GDT_ENTRIES * 8 - 1), the same entries as CPU 0's except that
 *     its TSS descriptor describes this CPU's TSS,
 *   TR's base = MVMM_CPU_TSS_GPA(cpu): that TSS (a CPU that reloads TR
 *     from its own GDT gets its own TSS back).
 * A CPU may find its number from its GDTR base (sgdt):
 * (base - MVMM_GDT_GPA) / MVMM_GDT_STRIDE. boot_info.gdt_gpa is CPU 0's.
 * There is no INIT/SIPI and no "up" call: a secondary CPU runs from the
 * start, like a Xen vCPU after VCPUOP_initialise + VCPUOP_up. Each CPU
 * has its own timers, which interrupt it only (MVMM_TIMER_VECTOR): a
 * one-shot (set_timer_op) and a periodic one (vcpu_op(set_periodic_timer));
 * CPU 0's periodic timer starts at boot_info.timer_hz, a secondary CPU has
 * none until it sets one. Any vCPU reaches any other with send_ipi
 * (MVMM_IPI_VECTOR). A vCPU that blocks (sched_op(block) or HLT) sleeps
 * until an interrupt is pending; the run stops as "halted forever" only when
 * every vCPU sleeps and nothing can wake any of them (none of a blocked
 * vCPU's own timers armed, no interrupt pending). */
#ifndef MINIVMM_ABI_BOOT_H_
#define MINIVMM_ABI_BOOT_H_

#include <stdint.h>

#include "minivmm_abi/hypercall.h"

#define MVMM_BOOT_MAGIC 0x4D564D4Du /* "MMVM" little-endian */
#define MVMM_BOOT_VERSION 1u

/* Guest-physical memory map fixed by the VMM (all inside RAM except the GDT). */
#define MVMM_BOOT_INFO_GPA 0x1000ull
#define MVMM_CMDLINE_GPA 0x2000ull
#define MVMM_CMDLINE_MAX 4095u /* bytes, excluding the terminating NUL */
#define MVMM_TSS_GPA 0x3000ull
#define MVMM_PAGE_TABLES_GPA 0x10000ull /* PML4, then PDPT, then PDs */
#define MVMM_PAGE_TABLES_END 0x20000ull
#define MVMM_BOOT_STACK_BOTTOM 0x70000ull
#define MVMM_BOOT_STACK_TOP 0x80000ull /* CPU 0's entry RSP */
/* Secondary CPUs: CPU n (1 <= n < MVMM_MAX_CPUS) enters with RSP at the top
 * of [MVMM_AP_STACKS_GPA + (n - 1) * MVMM_AP_STACK_SIZE, + MVMM_AP_STACK_SIZE),
 * and its TR base at MVMM_TSS_GPA + n * MVMM_TSS_STRIDE (all in the TSS page). */
#define MVMM_MAX_CPUS 32u
#define MVMM_AP_STACKS_GPA 0x80000ull
#define MVMM_AP_STACK_SIZE 0x4000ull
#define MVMM_AP_STACKS_END (MVMM_AP_STACKS_GPA + (MVMM_MAX_CPUS - 1) * MVMM_AP_STACK_SIZE)
#define MVMM_CPU_STACK_TOP(n) \
  ((n) == 0 ? MVMM_BOOT_STACK_TOP : MVMM_AP_STACKS_GPA + (uint64_t)(n)*MVMM_AP_STACK_SIZE)
#define MVMM_TSS_STRIDE 128ull
#define MVMM_CPU_TSS_GPA(n) (MVMM_TSS_GPA + (uint64_t)(n)*MVMM_TSS_STRIDE)
#define MVMM_VCPU_INFO_GPA 0x4000ull    /* vCPU 0's vcpu_info (zeroed), boot_info.vcpu_info_gpa */
#define MVMM_KERNEL_MIN_GPA 0x100000ull /* PT_LOAD segments start here or above */

/* The GDT page: one page in a read-only memslot outside RAM, so that every
 * guest store into it exits to the VMM. Guest RAM ends below it. It holds one
 * GDT per CPU, CPU n's at MVMM_CPU_GDT_GPA(n), each a block of 16 entries of
 * which the first MVMM_GDT_ENTRIES are used and the rest are zero; blocks of
 * CPUs the VM does not have are zero. */
#define MVMM_GDT_GPA 0xC0000000ull
#define MVMM_MEMORY_MIN (8ull << 20)
#define MVMM_MEMORY_MAX MVMM_GDT_GPA
/* Per-CPU GDTs: CPU n's is the MVMM_GDT_STRIDE bytes at MVMM_CPU_GDT_GPA(n). */
#define MVMM_GDT_STRIDE 128ull
#define MVMM_CPU_GDT_GPA(n) (MVMM_GDT_GPA + (uint64_t)(n)*MVMM_GDT_STRIDE)

/* GDT entries and selectors. */
#define MVMM_GDT_NULL 0u
#define MVMM_GDT_KERNEL_CODE 1u
#define MVMM_GDT_KERNEL_DATA 2u
#define MVMM_GDT_USER_DATA 3u
#define MVMM_GDT_USER_CODE 4u
#define MVMM_GDT_TSS 5u /* 16 bytes: entries 5 and 6 */
#define MVMM_GDT_TLS_FIRST 7u
#define MVMM_GDT_TLS_COUNT 3u /* entries 7, 8, 9; TLS slots start empty (all-zero) */
#define MVMM_GDT_ENTRIES 10u

#define MVMM_SEL_KERNEL_CS 0x08u
#define MVMM_SEL_KERNEL_DS 0x10u
#define MVMM_SEL_USER_DS 0x1bu
#define MVMM_SEL_USER_CS 0x23u
#define MVMM_SEL_TSS 0x28u
#define MVMM_SEL_TLS(i) ((uint16_t)(((MVMM_GDT_TLS_FIRST + (i)) << 3) | 3u))

/* Descriptor bits the TLS validator looks at. */
#define MVMM_DESC_ACCESSED (1ull << 40)

/* Devices. */
#define MVMM_COM1_PORT 0x3F8u
#define MVMM_DEBUG_EXIT_PORT 0xF4u /* QEMU isa-debug-exit: status (v << 1) | 1 */
#define MVMM_TIMER_VECTOR 0x20u
#define MVMM_IPI_VECTOR 0x21u /* the one vector send_ipi and flush_tlb_others deliver */

/* The built-in guest's shutdown codes (guest/README.md "Shutdown codes"):
 * its sched_op(shutdown) code, or the value it writes to the debug-exit port. */
#define MVMM_SHUTDOWN_OK 0
#define MVMM_SHUTDOWN_CHECK_FAILED 1 /* a self-check failed */
#define MVMM_SHUTDOWN_BAD_CMDLINE 2
#define MVMM_SHUTDOWN_EXCEPTION 3 /* an unhandled exception */
#define MVMM_SHUTDOWN_ASSERT 4    /* a kernel assertion or panic */

/* boot_info flags */
#define MVMM_BOOT_FLAG_TIMER_PERIODIC (1u << 0) /* --timer-hz > 0 */

struct mvmm_boot_info {
  uint32_t magic;          /* MVMM_BOOT_MAGIC */
  uint32_t version;        /* MVMM_BOOT_VERSION */
  uint64_t memory_size;    /* bytes of RAM at guest-physical 0 */
  uint64_t cmdline_gpa;    /* NUL-terminated */
  uint64_t cmdline_len;    /* bytes, excluding the NUL */
  uint64_t gdt_gpa;        /* MVMM_GDT_GPA */
  uint64_t tss_gpa;        /* MVMM_TSS_GPA */
  uint64_t first_free_gpa; /* page-aligned; RAM from here to memory_size is free */
  uint32_t hypercall_port; /* MVMM_HYPERCALL_PORT */
  uint32_t timer_vector;   /* MVMM_TIMER_VECTOR */
  uint32_t timer_hz;       /* CPU 0's periodic timer rate at boot, 0 when off */
  uint32_t flags;          /* MVMM_BOOT_FLAG_* */
  uint64_t vcpu_info_gpa;  /* MVMM_VCPU_INFO_GPA: where vCPU 0 may register its vcpu_info */
  uint32_t nr_cpus;        /* vCPUs entering at the entry point, 1..MVMM_MAX_CPUS */
  uint32_t reserved32;
  uint64_t reserved[4];
};

/* The shared-memory interrupt flag (Xen's struct vcpu_info, its two event
 * bytes at Xen's offsets). Inert until the guest registers it with
 * vcpu_op(MVMM_VCPUOP_REGISTER_VCPU_INFO, 0, gpa); from then on:
 * - the guest owns evtchn_upcall_mask: nonzero means "interrupts off", and
 *   the VMM never injects an interrupt while it is nonzero (nor while
 *   RFLAGS.IF is 0). The VMM never writes it.
 * - the VMM owns evtchn_upcall_pending: it sets it to 1 when it holds an
 *   interrupt back because the mask is set, and clears it to 0 when it
 *   injects. The guest only reads it: after clearing the mask it checks
 *   pending and, if set, calls force_evtchn_callback (one exit), after which
 *   the interrupt is delivered. An interrupt gate's RFLAGS.IF=0 stands in for
 *   Xen's mask-on-upcall: the VMM does not set the mask when it injects. */
struct mvmm_vcpu_info {
  uint8_t evtchn_upcall_pending;
  uint8_t evtchn_upcall_mask;
  uint8_t reserved[62];
};
#define MVMM_VCPU_INFO_ALIGN 64u /* a registered vcpu_info is 64-byte aligned */

/* A vCPU's run state as the VMM last wrote it (the state field of Xen's
 * struct vcpu_runstate_info, same values). Inert until the vCPU registers it
 * with vcpu_op(MVMM_VCPUOP_REGISTER_RUNSTATE_AREA, cpu, gpa); the VMM then
 * writes MVMM_RUNSTATE_RUNNING and flags 0 at once, MVMM_RUNSTATE_BLOCKED when
 * the vCPU blocks (sched_op(block) or HLT) before it sleeps, and RUNNING again
 * when it wakes. The VMM writes `state` on no other exit, so another CPU can
 * wait for a CPU to be idle by reading memory, without an exit of its own.
 * `flags` is shared: the VMM sets MVMM_RUNSTATE_FLUSH_TLB with an atomic OR
 * when another vCPU's flush_tlb_others names this one (KVM's
 * KVM_VCPU_FLUSH_TLB in steal_time.preempted); the guest takes it with an
 * atomic exchange and flushes its TLB before it uses a user mapping. */
#define MVMM_RUNSTATE_RUNNING 0u
#define MVMM_RUNSTATE_BLOCKED 2u
#define MVMM_RUNSTATE_FLUSH_TLB (1u << 0)
struct mvmm_vcpu_runstate {
  uint32_t state;
  uint32_t flags; /* MVMM_RUNSTATE_FLUSH_TLB */
};
#define MVMM_VCPU_RUNSTATE_ALIGN 8u

/* 64-bit TSS (only rsp0 is used). */
struct __attribute__((packed)) mvmm_tss {
  uint32_t reserved0;
  uint64_t rsp[3];
  uint64_t reserved1;
  uint64_t ist[7];
  uint64_t reserved2;
  uint16_t reserved3;
  uint16_t iomap_base;
};

#ifdef __cplusplus
#define MVMM_STATIC_ASSERT_ static_assert
#else
#define MVMM_STATIC_ASSERT_ _Static_assert
#endif
MVMM_STATIC_ASSERT_(sizeof(struct mvmm_boot_info) == 120, "boot_info size");
MVMM_STATIC_ASSERT_(__builtin_offsetof(struct mvmm_boot_info, memory_size) == 8, "abi");
MVMM_STATIC_ASSERT_(__builtin_offsetof(struct mvmm_boot_info, first_free_gpa) == 48, "abi");
MVMM_STATIC_ASSERT_(__builtin_offsetof(struct mvmm_boot_info, hypercall_port) == 56, "abi");
MVMM_STATIC_ASSERT_(__builtin_offsetof(struct mvmm_boot_info, flags) == 68, "abi");
MVMM_STATIC_ASSERT_(__builtin_offsetof(struct mvmm_boot_info, vcpu_info_gpa) == 72, "abi");
MVMM_STATIC_ASSERT_(__builtin_offsetof(struct mvmm_boot_info, nr_cpus) == 80, "abi");
MVMM_STATIC_ASSERT_(__builtin_offsetof(struct mvmm_boot_info, reserved) == 88, "abi");
MVMM_STATIC_ASSERT_(MVMM_AP_STACKS_END <= MVMM_KERNEL_MIN_GPA, "abi");
MVMM_STATIC_ASSERT_(MVMM_BOOT_STACK_TOP <= MVMM_AP_STACKS_GPA, "abi");
MVMM_STATIC_ASSERT_(MVMM_MAX_CPUS* MVMM_TSS_STRIDE <= 4096, "abi");
MVMM_STATIC_ASSERT_(MVMM_MAX_CPUS* MVMM_GDT_STRIDE <= 4096, "abi");
MVMM_STATIC_ASSERT_(MVMM_GDT_ENTRIES * 8 <= MVMM_GDT_STRIDE, "abi");
MVMM_STATIC_ASSERT_(sizeof(struct mvmm_vcpu_runstate) == 8, "runstate size");
MVMM_STATIC_ASSERT_(__builtin_offsetof(struct mvmm_vcpu_runstate, flags) == 4, "abi");
MVMM_STATIC_ASSERT_(sizeof(struct mvmm_vcpu_info) == MVMM_VCPU_INFO_ALIGN, "vcpu_info size");
MVMM_STATIC_ASSERT_(__builtin_offsetof(struct mvmm_vcpu_info, evtchn_upcall_pending) == 0, "abi");
MVMM_STATIC_ASSERT_(__builtin_offsetof(struct mvmm_vcpu_info, evtchn_upcall_mask) == 1, "abi");
MVMM_STATIC_ASSERT_(MVMM_VCPU_INFO_GPA % MVMM_VCPU_INFO_ALIGN == 0, "abi");
MVMM_STATIC_ASSERT_(sizeof(struct mvmm_tss) == 104, "tss size");
MVMM_STATIC_ASSERT_(__builtin_offsetof(struct mvmm_tss, rsp) == 4, "tss rsp0 offset");
#undef MVMM_STATIC_ASSERT_

#endif /* MINIVMM_ABI_BOOT_H_ */
