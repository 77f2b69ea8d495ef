// The pv backend: every privileged operation is a hypercall (docs/design.md
// "Hypercalls"), except the interrupt flag under pvops irq:shared, which is a
// byte in guest memory the VMM reads (PvSharedIrqInit).
// With pvops batch:on, operations issued inside a context switch or a
// page-table walk are queued and flushed as one multicall (Xen's lazy CPU
// and lazy MMU modes); any other hypercall is synchronous and flushes the
// queue first, so the VMM always sees operations in program order.
#include "arch/cpu.h"
#include "kernel/boot.h"
#include "kernel/hypercall.h"
#include "kernel/mem.h"
#include "kernel/panic.h"
#include "lib/batch.h"
#include "pv/pv_ops.h"

extern "C" uint64_t XenPteValCalleeThunk(uint64_t);

namespace guest {
namespace {

MulticallBatch g_batch;
int g_lazy_depth = 0;

bool Queueing() { return g_lazy_depth > 0 && PvBatching(); }

// A queueable operation: into the batch while in a lazy mode, else direct.
void Issue(uint64_t nr, uint64_t a0, uint64_t a1 = 0) {
  if (Queueing()) {
    if (g_batch.full()) FlushBatch(&g_batch);
    g_batch.Add(nr, a0, a1);
    return;
  }
  HypercallOrDie(nr, a0, a1);
}

// A synchronous hypercall whose result is needed now.
int64_t Sync(uint64_t nr, uint64_t a0, uint64_t a1 = 0) {
  FlushBatch(&g_batch);
  return HypercallOrDie(nr, a0, a1);
}

// save_fl reads the real RFLAGS: set_if changes the vCPU's IF itself, so
// pushf sees it without an exit (Xen reads its shared-info mask instead).
uint64_t PvSaveFl() { return cpu::SaveFlags(); }
void PvRestoreFl(uint64_t f) { Sync(MVMM_HC_set_if, (f & cpu::kRflagsIf) ? 1 : 0); }
void PvIrqDisable() { Sync(MVMM_HC_set_if, 0); }
void PvIrqEnable() { Sync(MVMM_HC_set_if, 1); }
void PvSafeHalt() {
  // Block with IF=0 (returns once an interrupt is pending), then enable:
  // the pending interrupt is delivered right after set_if(1).
  Sync(MVMM_HC_sched_op, MVMM_SCHEDOP_BLOCK);
  Sync(MVMM_HC_set_if, 1);
}

// The shared-memory interrupt flag (pvops irq:shared; minivmm_abi/boot.h):
// Xen's xen_irq_disable/enable, save_fl and restore_fl. Interrupts are "off"
// while evtchn_upcall_mask is set; RFLAGS.IF stays 1 outside interrupt and
// trap gates (whose IF=0 keeps the VMM from injecting into a handler, as
// Xen's mask-on-upcall does). Only unmasking with an event pending exits.
volatile mvmm_vcpu_info* g_vcpu_info = nullptr;

uint64_t SharedSaveFl() { return g_vcpu_info->evtchn_upcall_mask != 0 ? 0 : cpu::kRflagsIf; }
void SharedIrqDisable() {
  g_vcpu_info->evtchn_upcall_mask = 1;
  asm volatile("" ::: "memory");
}
// Clears the mask, then looks at pending: the VMM writes it only while the
// vCPU is out of the guest, so an interrupt that arrives after this read
// finds the mask clear and is injected directly.
void SharedUnmask() {
  asm volatile("" ::: "memory");
  g_vcpu_info->evtchn_upcall_mask = 0;
  asm volatile("" ::: "memory");
  ++g_kc.irq_unmasks;
  if (g_vcpu_info->evtchn_upcall_pending != 0) {
    ++g_kc.irq_unmasks_pending;
    Sync(MVMM_HC_force_evtchn_callback, 0);
  }
}
void SharedIrqEnable() { SharedUnmask(); }
void SharedRestoreFl(uint64_t f) {
  if (f & cpu::kRflagsIf) {
    SharedUnmask();
  } else {
    SharedIrqDisable();
  }
}
void SharedSafeHalt() {
  // Block with the mask set (returns once an interrupt is pending, which the
  // VMM then marks in evtchn_upcall_pending), then unmask: the pending
  // interrupt comes in through force_evtchn_callback.
  Sync(MVMM_HC_sched_op, MVMM_SCHEDOP_BLOCK);
  SharedUnmask();
}

void PvClts() { Issue(MVMM_HC_fpu_taskswitch, 0); }
void PvStts() { Issue(MVMM_HC_fpu_taskswitch, 1); }
void PvCltsForNm() { Issue(MVMM_HC_fpu_taskswitch, 0, MVMM_TS_CLEAR_FOR_NM); }

void PvWriteGdtEntry(unsigned index, uint64_t desc) {
  Issue(MVMM_HC_update_descriptor, g_boot.gdt_gpa + 8ull * index, desc);
}

void PvLoadSp0(uint64_t sp0) { Issue(MVMM_HC_stack_switch, MVMM_SEL_KERNEL_DS, sp0); }

// Xen's pte_pfn_to_mfn: the frame of a present entry through the p2m.
uint64_t PvMakePte(uint64_t val) {
  if (val & kPtePresent) ++g_kc.p2m_lookups;
  return PhysmapMakePte(g_pv_physmap, val);
}

mvmm_mmu_update g_single_req;

void PvSetPte(uint64_t* ptep, uint64_t val) {
  uint64_t gpa = reinterpret_cast<uintptr_t>(ptep);
  if (Queueing()) {
    if (g_batch.full()) FlushBatch(&g_batch);
    g_batch.AddMmuUpdate(gpa, val);
    return;
  }
  g_single_req = {gpa, val};
  Sync(MVMM_HC_mmu_update, reinterpret_cast<uintptr_t>(&g_single_req), 1);
}

mvmm_mmuext_op g_single_ext;

// Xen's mmuext_op(MMUEXT_NEW_BASEPTR): queued inside a context switch, so
// the address-space change rides in the switch's multicall.
void PvWriteCr3(uint64_t base) {
  if (Queueing()) {
    if (g_batch.full()) FlushBatch(&g_batch);
    g_batch.AddNewBasePtr(base);
    return;
  }
  g_single_ext = {MVMM_MMUEXT_NEW_BASEPTR, 0, base >> 12, 0};
  Sync(MVMM_HC_mmuext_op, reinterpret_cast<uintptr_t>(&g_single_ext), 1);
}

// The vCPU's own TLB is its own affair (a CR3 reload); flush_tlb_others is
// for the other CPUs' (PvFlushTlbOthers).
void PvFlushTlb() {
  FlushBatch(&g_batch);
  FlushTlb();
}

void PvSendIpi(uint64_t mask) { Sync(MVMM_HC_send_ipi, mask, MVMM_IPI_VECTOR); }
uint64_t PvFlushTlbOthers(uint64_t mask) {
  return static_cast<uint64_t>(Sync(MVMM_HC_flush_tlb_others, mask));
}

void PvEnterLazy() { ++g_lazy_depth; }
void PvLeaveLazy() {
  if (--g_lazy_depth == 0) FlushBatch(&g_batch);
}

}  // namespace

const PvOps kParavirtPvOps = {
    .name = "pv",
    .save_fl = PvSaveFl,
    .restore_fl = PvRestoreFl,
    .irq_disable = PvIrqDisable,
    .irq_enable = PvIrqEnable,
    .safe_halt = PvSafeHalt,
    .clts = PvClts,
    .stts = PvStts,
    .clts_for_nm = PvCltsForNm,
    .write_gdt_entry = PvWriteGdtEntry,
    .load_sp0 = PvLoadSp0,
    .set_pte = PvSetPte,
    .make_pte = PvMakePte,
    .pte_val = XenPteValCalleeThunk,
    .flush_tlb = PvFlushTlb,
    .write_cr3 = PvWriteCr3,
    .send_ipi = PvSendIpi,
    .flush_tlb_others = PvFlushTlbOthers,
    .start_context_switch = PvEnterLazy,
    .end_context_switch = PvLeaveLazy,
    .enter_lazy_mmu = PvEnterLazy,
    .leave_lazy_mmu = PvLeaveLazy,
};

bool PvBatching() { return PvVariant(PvOp::kBatch) != Variant::kNaive; }

void PvSharedIrqInit(PvOps* ops, uint64_t vcpu_info_gpa) {
  if (vcpu_info_gpa == 0) Panic("pvops irq:shared: boot_info has no vcpu_info_gpa");
  g_vcpu_info = reinterpret_cast<volatile mvmm_vcpu_info*>(vcpu_info_gpa);
  // Interrupts stay off (masked) as they were (IF=0), and the flag moves to
  // the mask: from here on RFLAGS.IF is 1 outside gates.
  g_vcpu_info->evtchn_upcall_mask = 1;
  HypercallOrDie(MVMM_HC_vcpu_op, MVMM_VCPUOP_REGISTER_VCPU_INFO, 0, vcpu_info_gpa);
  ops->save_fl = SharedSaveFl;
  ops->restore_fl = SharedRestoreFl;
  ops->irq_disable = SharedIrqDisable;
  ops->irq_enable = SharedIrqEnable;
  ops->safe_halt = SharedSafeHalt;
  cpu::Sti();
}

}  // namespace guest

// The C body behind XenPteValCalleeThunk (arch/entry.S), the pv pte_val:
// Xen's pte_mfn_to_pfn, the frame of a present entry through the m2p. The
// patched call sites do the same inline (PvPatchCallSites).
extern "C" uint64_t XenPteValC(uint64_t pte) {
  if (pte & guest::kPtePresent) ++guest::g_kc.m2p_lookups;
  return guest::PhysmapPteVal(guest::g_pv_physmap, pte);
}
