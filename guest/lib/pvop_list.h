// The one list of the guest's paravirtual ops (Linux's pv_ops choices):
// every name, spelling, default, preset and description of an op is here,
// and the command-line parser (lib/cmdline.cc), the config report, the
// CLI's exit table and the tests derive theirs from it. Freestanding (also
// compiled on the host). Adding an op: docs/extending.md.
//
// X(id, name, choices, default, xen, preset, bench, seed, description)
//   id          the PvOp enumerator (kIrqRestore)
//   name        its spelling in pvops= and in the config.pvops.<name> report
//   choices     the variants it accepts, "a|b|c"; each word is one of
//               kVariantWords below (batch spells naive/optimized off/on,
//               irq spells them hypercall/shared)
//   default     its variant when pvops= does not name it
//   xen         its variant under pvops=xen (Linux on Xen before the seeds)
//   preset      true when the all-op items `naive` and `optimized` set it
//   bench       the variants `minivmm bench` sweeps, each alone against all
//               naive, "a|b" ("" for none): a configuration named after the
//               op for the first, <op>_<variant> for the others
//   seed        true for the four seed patches: also swept alone against
//               Xen's baseline (configuration xen+<op>)
//               (fs_base is swept but no seed: it changes the FS base
//               writes of ctx/pipe with fs=base, docs/exit-model.md "5.",
//               and nothing elsewhere)
//               (pte_modify is neither in naive/optimized nor a seed: under
//               every earlier pvops= value cpa writes each entry once, as
//               before; its bench configuration is naive plus
//               pte_modify:naive, docs/exit-model.md "6.")
//               (sp0, minivmm's own idea rather than a Linux patch, is
//               naive by default, as Linux loads it on every switch, and
//               outside naive/optimized, so every earlier count holds; its
//               configuration is naive plus sp0:optimized, "7.")
//               (switch_mm is Linux's own check, optimized by default and
//               under xen, and outside naive/optimized, so every earlier
//               count holds; its configuration is naive plus
//               switch_mm:naive, "8.")
//   description one line: what the naive and the optimized forms do
#ifndef GUEST_LIB_PVOP_LIST_H_
#define GUEST_LIB_PVOP_LIST_H_

// pvops=xen, op by op: the four seeds naive, batching on, one event-channel
// notification per IPI target (xen_send_IPI_mask: send_ipi naive), TLB
// flushes of other CPUs as one hypercall (MMUEXT_TLB_FLUSH_MULTI: flush_tlb
// optimized), pv spinlocks (xen_qlock_wait's SCHEDOP_poll and the kick's
// event channel: spinlock optimized), plain SCHEDOP_yield (Xen has no
// directed yield: yield naive), a protection change written once (Xen's
// ptep_modify_prot_commit, Linux 2.6.26: pte_modify optimized), the
// shared-memory interrupt flag.
#define GUEST_PVOP_LIST(X)                                                                         \
  X(kIrqRestore, "irq_restore", "naive|optimized", kOptimized, kNaive, true, "optimized", true,    \
    "arch_local_irq_restore: every restore a set_if, or only those that enable interrupts")        \
  X(kFpuSwitch, "fpu_switch", "naive|optimized|eager", kOptimized, kNaive, true, "optimized",      \
    true,                                                                                          \
    "lazy FPU in __switch_to: an stts/clts pair per switch, none for the FPU owner, or eager")     \
  X(kTls, "tls", "naive|optimized", kOptimized, kNaive, true, "optimized", true,                   \
    "TLS descriptors on a switch: all three sent, or only those that changed (Xen's shadow)")      \
  X(kPteFlags, "pte_flags", "naive|optimized|patched", kOptimized, kNaive, true,                   \
    "optimized|patched", true,                                                                     \
    "pte_flags(): pte_val through the pv_ops call, masked inline (pte_attrs), or call patched")    \
  X(kBatch, "batch", "off|on", kOptimized, kOptimized, true, "on", false,                          \
    "lazy CPU and MMU modes: each operation its own hypercall, or one multicall per batch")        \
  X(kSendIpi, "send_ipi", "naive|optimized", kOptimized, kNaive, true, "", false,                  \
    "an IPI to a set of CPUs: one send_ipi per target, or one for the whole mask")                 \
  X(kFlushTlb, "flush_tlb", "naive|optimized", kOptimized, kOptimized, true, "", false,            \
    "a remote TLB flush: a request and an IPI per target, or one flush_tlb_others hypercall")      \
  X(kSpinlock, "spinlock", "naive|optimized", kOptimized, kOptimized, true, "", false,             \
    "a contended spinlock: spin and yield, or spin a while then sleep in lock_wait until kicked")  \
  X(kYield, "yield", "naive|optimized", kOptimized, kNaive, true, "", false,                       \
    "the spinning lock's yield: sched_op(yield), or a directed yield to the holder's vCPU")        \
  X(kFsBase, "fs_base", "naive|optimized", kOptimized, kNaive, true, "optimized", false,           \
    "a 64-bit FS base on a switch: written into every task that has one, or only when it differs") \
  X(kPteModify, "pte_modify", "naive|optimized", kOptimized, kOptimized, false, "naive", false,    \
    "a PTE's protection change: cleared, then written (two updates), or written once")             \
  X(kSp0, "sp0", "naive|optimized", kNaive, kNaive, false, "optimized", false,                     \
    "TSS.rsp0 on a switch: next's stack for every task, or only for a user task (ring-3 entries)") \
  X(kSwitchMm, "switch_mm", "naive|optimized", kOptimized, kOptimized, false, "naive", false,      \
    "CR3 on a switch into a user task: loaded every time, or only from another address space")     \
  X(kIrq, "irq", "hypercall|shared", kNaive, kShared, false, "", false,                            \
    "the interrupt flag under pv: a set_if exit per change, or Xen's mask in shared memory")

// The spellings of the variants, each with the Variant it means. A word
// may appear in several ops' choices; an op accepts the words its choices
// list.
#define GUEST_VARIANT_WORD_LIST(X) \
  X("naive", kNaive)               \
  X("optimized", kOptimized)       \
  X("eager", kEager)               \
  X("patched", kPatched)           \
  X("off", kNaive)                 \
  X("on", kOptimized)              \
  X("hypercall", kNaive)           \
  X("shared", kShared)

#endif  // GUEST_LIB_PVOP_LIST_H_
