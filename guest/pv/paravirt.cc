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
#include "kernel/percpu.h"
#include "lib/batch.h"
#include "pv/pv_ops.h"

extern "C" uint64_t XenPteValCalleeThunk(uint64_t);

namespace guest {
namespace {

// Per CPU: its lazy-mode batch and the argument blocks of its single
// operations, each used by its own CPU only.
struct PvCpu {
  MulticallBatch batch;
  int lazy_depth = 0;
  mvmm_mmu_update single_req = {};
  mvmm_mmuext_op single_ext = {};
  // pvops irq:shared: this CPU's registered vcpu_info (CPU 0's at boot_info's
  // vcpu_info_gpa, another CPU's in `own_vcpu_info`), null before.
  volatile mvmm_vcpu_info* vcpu_info = nullptr;
  alignas(MVMM_VCPU_INFO_ALIGN) mvmm_vcpu_info own_vcpu_info = {};
};
constinit PvCpu g_pv_cpu[MVMM_MAX_CPUS];

PvCpu& Mine() { return g_pv_cpu[CurrentCpu()]; }

bool Queueing() { return Mine().lazy_depth > 0 && PvBatching(); }

// A queueable operation: into the batch while in a lazy mode, else direct.
void Issue(uint64_t nr, uint64_t a0, uint64_t a1 = 0) {
  if (Queueing()) {
    MulticallBatch& batch = Mine().batch;
    if (batch.full()) FlushBatch(&batch);
    batch.Add(nr, a0, a1);
    return;
  }
  HypercallOrDie(nr, a0, a1);
}

// A synchronous hypercall whose result is needed now.
int64_t Sync(uint64_t nr, uint64_t a0, uint64_t a1 = 0) {
  FlushBatch(&Mine().batch);
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
volatile mvmm_vcpu_info* VcpuInfo() { return Mine().vcpu_info; }

uint64_t SharedSaveFl() { return VcpuInfo()->evtchn_upcall_mask != 0 ? 0 : cpu::kRflagsIf; }
void SharedIrqDisable() {
  VcpuInfo()->evtchn_upcall_mask = 1;
  asm volatile("" ::: "memory");
}
// Clears the mask, then looks at pending: the VMM writes it only while the
// vCPU is out of the guest, so an interrupt that arrives after this read
// finds the mask clear and is injected directly.
void SharedUnmask() {
  volatile mvmm_vcpu_info* info = VcpuInfo();
  asm volatile("" ::: "memory");
  info->evtchn_upcall_mask = 0;
  asm volatile("" ::: "memory");
  Count(&KernelCounters::irq_unmasks);
  if (info->evtchn_upcall_pending != 0) {
    Count(&KernelCounters::irq_unmasks_pending);
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
  Issue(MVMM_HC_update_descriptor, ThisCpuGdt() + 8ull * index, desc);
}

void PvLoadSp0(uint64_t sp0) { Issue(MVMM_HC_stack_switch, MVMM_SEL_KERNEL_DS, sp0); }
// xen_write_msr(MSR_FS_BASE): not batched, as it follows the %fs reload.
void PvWriteFsBase(uint64_t base) { Sync(MVMM_HC_set_segment_base, MVMM_SEGBASE_FS, base); }

// Xen's pte_pfn_to_mfn: the frame of a present entry through the p2m.
uint64_t PvMakePte(uint64_t val) {
  if (val & kPtePresent) Count(&KernelCounters::p2m_lookups);
  return PhysmapMakePte(g_pv_physmap, val);
}

void PvSetPte(uint64_t* ptep, uint64_t val) {
  uint64_t gpa = reinterpret_cast<uintptr_t>(ptep);
  PvCpu& me = Mine();
  if (Queueing()) {
    if (me.batch.full()) FlushBatch(&me.batch);
    me.batch.AddMmuUpdate(gpa, val);
    return;
  }
  me.single_req = {gpa, val};
  Sync(MVMM_HC_mmu_update, reinterpret_cast<uintptr_t>(&me.single_req), 1);
}

// Xen's mmuext_op(MMUEXT_NEW_BASEPTR): queued inside a context switch, so
// the address-space change rides in the switch's multicall.
void PvWriteCr3(uint64_t base) {
  PvCpu& me = Mine();
  if (Queueing()) {
    if (me.batch.full()) FlushBatch(&me.batch);
    me.batch.AddNewBasePtr(base);
    return;
  }
  me.single_ext = {MVMM_MMUEXT_NEW_BASEPTR, 0, base >> 12, 0};
  Sync(MVMM_HC_mmuext_op, reinterpret_cast<uintptr_t>(&me.single_ext), 1);
}

// The vCPU's own TLB is its own affair (a CR3 reload); flush_tlb_others is
// for the other CPUs' (PvFlushTlbOthers).
void PvFlushTlb() {
  FlushBatch(&Mine().batch);
  FlushTlb();
}

void PvSendIpi(uint64_t mask) { Sync(MVMM_HC_send_ipi, mask, MVMM_IPI_VECTOR); }
uint64_t PvFlushTlbOthers(uint64_t mask) {
  return static_cast<uint64_t>(Sync(MVMM_HC_flush_tlb_others, mask));
}

void PvEnterLazy() { ++Mine().lazy_depth; }
void PvLeaveLazy() {
  PvCpu& me = Mine();
  if (--me.lazy_depth == 0) FlushBatch(&me.batch);
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
    .write_fs_base = PvWriteFsBase,
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
  PvCpu& me = Mine();
  me.vcpu_info = reinterpret_cast<volatile mvmm_vcpu_info*>(vcpu_info_gpa);
  // Interrupts stay off (masked) as they were (IF=0), and the flag moves to
  // the mask: from here on RFLAGS.IF is 1 outside gates.
  me.vcpu_info->evtchn_upcall_mask = 1;
  HypercallOrDie(MVMM_HC_vcpu_op, MVMM_VCPUOP_REGISTER_VCPU_INFO, 0, vcpu_info_gpa);
  ops->save_fl = SharedSaveFl;
  ops->restore_fl = SharedRestoreFl;
  ops->irq_disable = SharedIrqDisable;
  ops->irq_enable = SharedIrqEnable;
  ops->safe_halt = SharedSafeHalt;
  cpu::Sti();
}

void PvSecondaryIrqInit() {
  PvCpu& me = Mine();
  if (!PvIrqShared() || me.vcpu_info != nullptr) return;
  // This CPU runs with interrupts on (RFLAGS.IF=1 since bring-up): the
  // mask starts clear, the same state.
  me.own_vcpu_info.evtchn_upcall_mask = 0;
  me.vcpu_info = &me.own_vcpu_info;
  HypercallOrDie(MVMM_HC_vcpu_op, MVMM_VCPUOP_REGISTER_VCPU_INFO, CurrentCpu(),
                 reinterpret_cast<uint64_t>(&me.own_vcpu_info));
}

}  // namespace guest

// The C body behind XenPteValCalleeThunk (arch/entry.S), the pv pte_val:
// Xen's pte_mfn_to_pfn, the frame of a present entry through the m2p. The
// patched call sites do the same inline (PvPatchCallSites), and count the
// lookup the same way: one locked add to CPU 0's m2p_lookups (the inline
// form has no per-CPU address), so that the naive and patched variants pay
// the same bookkeeping and differ only by the call.
extern "C" uint64_t XenPteValC(uint64_t pte) {
  if (guest::kCounters && (pte & guest::kPtePresent) != 0)
    __atomic_add_fetch(&guest::g_cpus[0].kc.m2p_lookups, 1, __ATOMIC_RELAXED);
  return guest::PhysmapPteVal(guest::g_pv_physmap, pte);
}
