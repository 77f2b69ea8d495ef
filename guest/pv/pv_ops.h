// The one table through which every privileged operation goes (Linux
// pv_ops). Chosen once at boot: the backend's table from backend=, then
// (PvOpsInit, as Linux's kvm_guest_init and xen_start_kernel write theirs)
// the entries whose naive and optimized variants are different functions:
// the policy group (irq_restore, send_ipi, flush_tlb, pte_modify, sp0) and the lock group
// (spinlock, yield). The inline wrappers below add the kernel's event
// counting, so the two backends stay raw and symmetrical. Four variants
// are policies inside the context switch rather than entries, read where
// the switch decides (kernel/switch.cc): fpu_switch (when TS is set and
// cleared), tls (which descriptors are sent), fs_base (when the base is
// written) and switch_mm (when CR3 is loaded). pte_flags is the kernel compiled twice, a pte_val
// call or an inline mask (the comparison is of the call itself, so it cannot be an entry;
// WithPteFlags picks the instance), plus patched, the call sites rewritten at boot
// (PvPatchCallSites); batch is the pv backend's own (PvBatching); irq picks the irq entries
// (PvSharedIrqInit).
#ifndef GUEST_PV_PV_OPS_H_
#define GUEST_PV_PV_OPS_H_

#include <stddef.h>
#include <stdint.h>

#include "kernel/counters.h"
#include "kernel/mem.h"
#include "kernel/percpu.h"
#include "lib/cmdline.h"
#include "lib/physmap.h"

namespace guest {

class SpinLock;  // kernel/spinlock.h

struct PvOps {
  const char* name;

  // Interrupt flag.
  uint64_t (*save_fl)();
  void (*restore_fl)(uint64_t flags);
  void (*irq_disable)();
  void (*irq_enable)();
  // Idle: wait for an interrupt; called with IF=0, returns with IF=1.
  void (*safe_halt)();

  // The FPU's TS bit in CR0.
  void (*clts)();
  void (*stts)();
  // The #NM handler's clts: the FPU is about to be used. The pv backend says
  // so to the VMM, whose wasted-exit analysis tells a TS set that an FPU use
  // needed from one the next clts simply cancels.
  void (*clts_for_nm)();

  // Descriptor tables and the TSS.
  void (*write_gdt_entry)(unsigned index, uint64_t desc);
  void (*load_sp0)(uint64_t sp0);
  // The FS segment's 64-bit base (wrmsr MSR_FS_BASE).
  void (*write_fs_base)(uint64_t base);

  // Page tables. Entries hold machine frames; the kernel speaks
  // pseudo-physical ones (lib/physmap.h): make_pte turns a pseudo-physical
  // entry into the machine one to write, pte_val a written entry back.
  // Both are the identity under native. pte_val has the callee-save
  // convention (PVOP_CALLEE): it is only ever called from PvPteVal()'s asm,
  // which clobbers only RAX.
  void (*set_pte)(uint64_t* ptep, uint64_t val);
  uint64_t (*make_pte)(uint64_t val);
  uint64_t (*pte_val)(uint64_t pte);
  void (*flush_tlb)();
  // Loads the page-table base (CR3) with the top-level table at
  // guest-physical `base`: a switch to another address space.
  void (*write_cr3)(uint64_t base);

  // Other CPUs. send_ipi makes MVMM_IPI_VECTOR pending on every CPU in
  // `mask` with one send_ipi hypercall; flush_tlb_others is one
  // flush_tlb_others hypercall and returns how many targets the VMM kicked.
  // The same hypercalls under native (minivmm emulates no APIC: an IPI is
  // the hypercall either way). Synchronous: a pending batch goes first.
  void (*send_ipi)(uint64_t mask);
  uint64_t (*flush_tlb_others)(uint64_t mask);

  // Lazy modes (Xen): operations between start and end may be queued and
  // are issued, at the latest, by the end hook.
  void (*start_context_switch)();
  void (*end_context_switch)();
  void (*enter_lazy_mmu)();
  void (*leave_lazy_mmu)();

  // ---- Installed by PvOpsInit from pvops=, the same under both backends
  // (null in the backends' tables).
  // The policy group: arch_local_irq_restore (irq_restore: naive, every
  // restore through restore_fl; optimized, irq_enable only when `flags`
  // has IF set), an IPI to a set of CPUs (send_ipi: naive, one send_ipi
  // per target; optimized, one for the mask), and a TLB flush of other
  // CPUs (flush_tlb: naive, a FLUSH request and an IPI to each, then a
  // wait; optimized, one flush_tlb_others, its kicked targets counted), and
  // a change of a present entry's protection to `val` (pte_modify, Linux's
  // ptep_modify_prot_start/commit: naive, the entry cleared and then
  // written, two set_pte; optimized, written once, as Xen's commit).
  void (*irq_restore)(uint64_t flags) = nullptr;
  void (*send_ipi_mask)(uint64_t mask) = nullptr;
  void (*flush_tlb_mask)(uint64_t mask) = nullptr;
  void (*modify_pte)(uint64_t* ptep, uint64_t val) = nullptr;
  // The stack the CPU enters ring 0 on from ring 3 (TSS.rsp0), on a switch
  // to a task whose stack top is `sp0` (sp0: naive, load_sp0 on every
  // switch, as Linux's __switch_to; optimized, only into a `user` task:
  // only an entry from ring 3 reads it, and a kernel thread makes none).
  void (*switch_sp0)(uint64_t sp0, bool user) = nullptr;
  // The lock group (Linux pv_ops.lock). lock_slowpath takes a contended
  // `lock` for CPU `me` (spinlock: naive, spin and yield; optimized, spin
  // kSpinThreshold times, then sleep in lock_wait until kicked: the two
  // slow paths of kernel/spinlock.h). lock_wait sleeps this vCPU until
  // `*word` no longer holds `value` or a kick comes, and returns the
  // hypercall's answer; lock_kick wakes CPU `cpu`'s lock_wait; yield gives
  // the vCPU up while CPU `owner` holds the lock (naive, sched_op(yield);
  // optimized, sched_op(yield_to, owner) when `owner` is another CPU's
  // number).
  void (*lock_slowpath)(SpinLock* lock, uint32_t me) = nullptr;
  int64_t (*lock_wait)(const uint32_t* word, uint32_t value) = nullptr;
  void (*lock_kick)(uint32_t cpu) = nullptr;
  void (*yield)(uint32_t owner, uint32_t me) = nullptr;
};

extern PvOps pv_ops;
extern const PvOps kNativePvOps;
extern const PvOps kParavirtPvOps;

// Installs the backend and remembers the variants. Boot only.
void PvOpsInit(const Config& config);
Variant PvVariant(PvOp op);

// ---- Counted wrappers: the rest of the kernel calls only these. ----

inline uint64_t ArchSaveFlags() { return pv_ops.save_fl(); }
inline void ArchIrqDisable() {
  Count(&KernelCounters::irq_disables);
  pv_ops.irq_disable();
}
inline void ArchIrqEnable() {
  Count(&KernelCounters::irq_enables);
  pv_ops.irq_enable();
}
// arch_local_irq_restore, with the irq_restore variant (pv_ops.irq_restore),
// counted as irq_restores_if_set or irq_restores_if_clear. Out of line, as
// SendIpiMask and FlushTlbOthers: each is a frame of its own in an exit's
// stack (docs/sites.md).
void ArchIrqRestore(uint64_t flags);

inline uint64_t ArchLocalIrqSave() {
  uint64_t f = ArchSaveFlags();
  ArchIrqDisable();
  return f;
}

inline void Clts() {
  Count(&KernelCounters::cr0_writes);
  pv_ops.clts();
}
inline void CltsForNm() {
  Count(&KernelCounters::cr0_writes);
  pv_ops.clts_for_nm();
}
inline void Stts() {
  Count(&KernelCounters::cr0_writes);
  pv_ops.stts();
}
inline void WriteGdtEntry(unsigned index, uint64_t desc) {
  Count(&KernelCounters::desc_updates);
  pv_ops.write_gdt_entry(index, desc);
}
inline void LoadSp0(uint64_t sp0) {
  Count(&KernelCounters::sp0_loads);
  pv_ops.load_sp0(sp0);
}
inline void WriteFsBase(uint64_t base) {
  Count(&KernelCounters::fs_base_loads);
  pv_ops.write_fs_base(base);
}
inline void WriteCr3(uint64_t base) {
  Count(&KernelCounters::cr3_writes);
  pv_ops.write_cr3(base);
}
inline void SetPte(uint64_t* ptep, uint64_t val) {
  Count(&KernelCounters::pte_updates);
  pv_ops.set_pte(ptep, val);
}

// An IPI to every CPU in `mask` with the send_ipi variant: naive, one
// send_ipi hypercall per target (Linux's x2apic/Xen send_IPI_mask loop);
// optimized, one for the whole mask. Counted as ipis_sent, one per target.
// An empty mask sends nothing.
void SendIpiMask(uint64_t mask);
// Has every CPU in `mask` (never the caller) flush its TLB, with the
// flush_tlb variant: naive, a FLUSH request and an IPI (SendIpiMask) to
// each, then waits until each has flushed itself; optimized, one
// flush_tlb_others hypercall (a blocked target flushes when it next runs).
// Counted as tlb_shootdowns, tlb_flush_targets and, optimized,
// tlb_flushes_kicked. An empty mask does nothing.
void FlushTlbOthers(uint64_t mask);

// A change of the present entry at `ptep` to `val`, which maps the same
// frame (mprotect's change_pte_range, the pte_modify variant). Each write
// is a SetPte, counted in pte_updates.
inline void ModifyPte(uint64_t* ptep, uint64_t val) { pv_ops.modify_pte(ptep, val); }

// A switch to a task whose kernel stack top is `sp0` and which runs ring-3
// code when `user` (the sp0 variant). Each load is a LoadSp0, counted in
// sp0_loads.
inline void SwitchSp0(uint64_t sp0, bool user) { pv_ops.switch_sp0(sp0, user); }

// Linux __pte / pfn_pte: the entry to write for pseudo-physical `val`.
inline uint64_t MakePte(uint64_t val) { return pv_ops.make_pte(val); }

// The bytes reserved at each pte_val call site: the indirect call, a short
// jump over the rest, and room for the longest inline replacement
// (PvPatchCallSites).
inline constexpr uint64_t kPteValSiteBytes = 80;

// pte_val through the indirect pv_ops call behind the callee-save thunk.
// Each call site is recorded in .parainstructions so that pte_flags=patched
// can rewrite it at boot into the backend's inline pte_val
// (PvPatchCallSites).
__attribute__((always_inline)) inline uint64_t PvPteVal(uint64_t pte) {
  uint64_t ret;
  asm volatile(
      "771: call *%[op]\n"
      ".byte 0xeb, 772f - 773f\n"  // jmp 772f
      "773: .skip %c[site] - (773b - 771b), 0xcc\n"
      "772:\n"
      ".pushsection .parainstructions,\"a\"\n"
      ".quad 771b\n"
      ".quad 772b - 771b\n"
      ".popsection\n"
      : "=a"(ret)
      : [op] "m"(pv_ops.pte_val), "D"(pte), [site] "i"(kPteValSiteBytes)
      : "memory");
  return ret;
}

// pte_flags() as the pte_flags variant compiles it. The comparison is of
// the call itself, so the variant is not an entry but the code at the call
// site: PteFlagsViaPteVal is Linux's pte_flags(), pte_val() (the recorded,
// patchable pv call) masked inline, for naive and patched; PteAttrs is
// pte_attrs, the mask alone (the flags need no translation), for optimized.
// Each counts pte_flags_calls.
struct PteFlagsViaPteVal {
  [[gnu::always_inline]] uint64_t operator()(uint64_t pte) const {
    Count(&KernelCounters::pte_flags_calls);
    return PvPteVal(pte) & kPteFlagsMask;
  }
};
struct PteAttrs {
  [[gnu::always_inline]] uint64_t operator()(uint64_t pte) const {
    Count(&KernelCounters::pte_flags_calls);
    return pte & kPteFlagsMask;
  }
};

// Runs `body(pte_flags)` with the pte_flags variant's accessor: code that
// reads flags in a loop is a template over the accessor, instantiated once
// per variant, and this is the one place that reads the variant (as the
// table is for the other ops): no caller chooses.
template <typename Body>
[[gnu::always_inline]] inline auto WithPteFlags(Body&& body) {
  if (PvVariant(PvOp::kPteFlags) == Variant::kOptimized) return body(PteAttrs{});
  return body(PteFlagsViaPteVal{});  // naive, and patched (the same sites, rewritten at boot)
}

// Rewrites every recorded pte_val call site into the backend's pte_val,
// inline: `mov %rdi,%rax` under native (Linux's patch of
// _paravirt_ident_64), the m2p lookup under pv. Returns the number of sites
// patched.
uint64_t PvPatchCallSites();

// The pv backend's p2m and m2p (lib/physmap.h). Meaningful under
// backend=pv once PvPhysmapInit has run.
extern Physmap g_pv_physmap;

// Under backend=pv: builds the p2m and m2p for the pool of
// kPhysmapPoolPages frames at `pool_pa` and rewrites `pt`, the boot table
// mapping the pool (not live yet, entries pointing at their own
// pseudo-physical frames), to machine frames. Does nothing under native.
void PvPhysmapInit(uint64_t pool_pa, uint64_t* pt);

// True when batching is on and the pv backend queues operations.
bool PvBatching();

// True under backend=pv with pvops irq:shared: the interrupt flag is
// evtchn_upcall_mask, and RFLAGS.IF is 1 outside interrupt and trap gates.
bool PvIrqShared();

// Registers the vcpu_info at `vcpu_info_gpa` (boot_info) with the VMM and
// makes `ops` use it for save_fl, restore_fl, irq_disable, irq_enable and
// safe_halt. Called at boot with interrupts off; they stay off (masked).
// Every CPU uses its own vcpu_info.
void PvSharedIrqInit(PvOps* ops, uint64_t vcpu_info_gpa);
// On a secondary CPU, before its first use of the irq pv ops (its first
// Schedule): under pvops irq:shared, registers a vcpu_info of its own (one
// vcpu_op), with the mask clear as its interrupts are on. Does nothing
// otherwise or when done before.
void PvSecondaryIrqInit();

}  // namespace guest

#endif  // GUEST_PV_PV_OPS_H_
