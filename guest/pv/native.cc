// The native backend: raw instructions. Under minivmm, GDT stores trap to
// the VMM through the read-only GDT page; CR0 and IF changes are invisible
// to it (except as interrupt-window exits). IPIs are hypercalls here too.
#include "arch/cpu.h"
#include "kernel/boot.h"
#include "kernel/hypercall.h"
#include "kernel/mem.h"
#include "kernel/percpu.h"
#include "pv/pv_ops.h"

extern "C" uint64_t PteValCalleeThunk(uint64_t);

namespace guest {
namespace {

uint64_t NativeSaveFl() { return cpu::SaveFlags(); }
void NativeRestoreFl(uint64_t f) { cpu::RestoreFlags(f); }
void NativeIrqDisable() { cpu::Cli(); }
void NativeIrqEnable() { cpu::Sti(); }
void NativeSafeHalt() { cpu::SafeHalt(); }

void NativeClts() { cpu::Clts(); }
void NativeStts() { cpu::WriteCr0(cpu::ReadCr0() | cpu::kCr0Ts); }

void NativeWriteGdtEntry(unsigned index, uint64_t desc) {
  // One aligned 8-byte store: the VMM's validator applies exactly that form.
  uint64_t* slot = reinterpret_cast<uint64_t*>(ThisCpuGdt() + 8ull * index);
  asm volatile("movq %1, %0" : "=m"(*slot) : "r"(desc) : "memory");
}

void NativeLoadSp0(uint64_t sp0) { ThisCpuTss()->rsp[0] = sp0; }
void NativeWriteFsBase(uint64_t base) {
  constexpr uint32_t kMsrFsBase = 0xc0000100;
  asm volatile("wrmsr" ::"c"(kMsrFsBase), "a"(static_cast<uint32_t>(base)),
               "d"(static_cast<uint32_t>(base >> 32))
               : "memory");
}

void NativeSetPte(uint64_t* ptep, uint64_t val) {
  *reinterpret_cast<volatile uint64_t*>(ptep) = val;
}
uint64_t NativeMakePte(uint64_t val) { return val; }
void NativeFlushTlb() { FlushTlb(); }
void NativeWriteCr3(uint64_t base) { cpu::WriteCr3(base); }
// No APIC is emulated: the IPI hypercalls are the way to another CPU.
void NativeSendIpi(uint64_t mask) { HypercallOrDie(MVMM_HC_send_ipi, mask, MVMM_IPI_VECTOR); }
uint64_t NativeFlushTlbOthers(uint64_t mask) {
  return static_cast<uint64_t>(HypercallOrDie(MVMM_HC_flush_tlb_others, mask));
}
void NoOp() {}

}  // namespace

const PvOps kNativePvOps = {
    .name = "native",
    .save_fl = NativeSaveFl,
    .restore_fl = NativeRestoreFl,
    .irq_disable = NativeIrqDisable,
    .irq_enable = NativeIrqEnable,
    .safe_halt = NativeSafeHalt,
    .clts = NativeClts,
    .stts = NativeStts,
    .clts_for_nm = NativeClts,
    .write_gdt_entry = NativeWriteGdtEntry,
    .load_sp0 = NativeLoadSp0,
    .write_fs_base = NativeWriteFsBase,
    .set_pte = NativeSetPte,
    .make_pte = NativeMakePte,
    .pte_val = PteValCalleeThunk,
    .flush_tlb = NativeFlushTlb,
    .write_cr3 = NativeWriteCr3,
    .send_ipi = NativeSendIpi,
    .flush_tlb_others = NativeFlushTlbOthers,
    .start_context_switch = NoOp,
    .end_context_switch = NoOp,
    .enter_lazy_mmu = NoOp,
    .leave_lazy_mmu = NoOp,
};

}  // namespace guest
