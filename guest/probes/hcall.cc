// workload=hcall (the hypercall integration workload): every hypercall of the
// ABI with good and bad arguments, each result checked against the answer
// hypercalls/handlers/*.cc documents; the first mismatch ends the run with
// code 1 naming the call, the expected and the actual result. Every call is
// counted (kernel/hypercall.h), and the record carries the per-hypercall
// deltas (hcall.<name>.calls/.ops/.errors, hcall.bad_number), so a host test
// can assert the VMM's hc_exits/hc_ops/hc_errors equal them exactly (and
// kernel.hc*.<name> for the whole run). Everything the calls change (CR0,
// IF, TSS.rsp0, the GDT's TLS slot 7, a live PTE, CR3) is put back and
// checked; IPIs it sends itself are checked taken, and merged when two
// were pending.
#include "arch/cpu.h"
#include "kernel/boot.h"
#include "kernel/hypercall.h"
#include "kernel/mem.h"
#include "kernel/percpu.h"
#include "kernel/smp.h"
#include "lib/desc.h"
#include "probes/probe.h"
#include "pv/pv_ops.h"
#include "workloads/workload.h"

namespace guest {
namespace {

using probe::ReadGdt;
constexpr uint64_t kNoTag = Prober::kNoTag;

HypercallCounts g_before;  // 3 KiB: not on the boot stack
mvmm_mmu_update g_reqs[2];
mvmm_multicall_entry g_list[8];
const char kConsoleText[] = "hcall: console_io probe\n";
const char kReportText[] = "hcall.report_probe=1\n";
const char kBadReport[] = "a line without an equals sign\n";

void ProbeMmuUpdate(Prober& p, uint64_t mem) {
  auto* scratch = static_cast<uint64_t*>(AllocPages(1));
  uint64_t* live = LookupPte(CpaArena().start);  // a live 4 KiB PTE
  uint64_t live_val = *live;
  uint64_t reqs = reinterpret_cast<uintptr_t>(g_reqs);
  // A not-present value may hold anything; the live PTE gets its own value.
  g_reqs[0] = {reinterpret_cast<uintptr_t>(&scratch[0]), 0xabc0};
  g_reqs[1] = {reinterpret_cast<uintptr_t>(live), live_val};
  p.Call("mmu_update two good requests", kNoTag, 2, MVMM_HC_mmu_update, reqs, 2);
  p.Expect("mmu_update stored the value", kNoTag, scratch[0], 0xabc0);
  p.Call("mmu_update count 0", kNoTag, 0, MVMM_HC_mmu_update, reqs, 0);
  p.Call("mmu_update count 513", kNoTag, -MVMM_E2BIG, MVMM_HC_mmu_update, reqs, 513);
  p.Call("mmu_update list outside RAM", kNoTag, -MVMM_EFAULT, MVMM_HC_mmu_update, mem, 1);
  g_reqs[0] = {reinterpret_cast<uintptr_t>(&scratch[1]) + 1, 0};
  p.Call("mmu_update misaligned ptr", kNoTag, -MVMM_EINVAL, MVMM_HC_mmu_update, reqs, 1);
  g_reqs[0] = {mem, 0};
  p.Call("mmu_update ptr outside RAM", kNoTag, -MVMM_EFAULT, MVMM_HC_mmu_update, reqs, 1);
  g_reqs[0] = {reinterpret_cast<uintptr_t>(live), mem | kPtePresent | kPteWrite};
  p.Call("mmu_update frame outside RAM", kNoTag, -MVMM_EPERM, MVMM_HC_mmu_update, reqs, 1);
  p.Expect("mmu_update left the live PTE alone", kNoTag, *live, live_val);
  // A refused second request: the first is done, the result is the count.
  g_reqs[0] = {reinterpret_cast<uintptr_t>(&scratch[2]), 0x5550};
  g_reqs[1] = {reinterpret_cast<uintptr_t>(live), kPtePresent | kPteHuge};
  p.Call("mmu_update good then PS bit", kNoTag, 1, MVMM_HC_mmu_update, reqs, 2);
  p.Expect("mmu_update did the first request", kNoTag, scratch[2], 0x5550);
  p.Expect("mmu_update stopped at the second", kNoTag, *live, live_val);
}

mvmm_mmuext_op g_ext[2];

// mmuext_op(NEW_BASEPTR): a new address space whose private region maps a
// tagged page; reading it through the private address proves the new CR3
// reached the vCPU (directly and from a multicall). Then every refusal,
// each leaving CR3 as it was, and the old base back.
void ProbeMmuextOp(Prober& p, uint64_t mem) {
  const uint64_t old_cr3 = cpu::ReadCr3();
  Mm* mm = NewMm();
  auto* page = static_cast<uint64_t*>(AllocPages(1));
  page[0] = 0x3c3c000000000026ull;
  MapPrivatePage(mm, kPrivateBase, reinterpret_cast<uintptr_t>(page));
  const uint64_t base = reinterpret_cast<uintptr_t>(mm->pml4);
  const uint64_t ops = reinterpret_cast<uintptr_t>(g_ext);
  const auto* tagged = reinterpret_cast<const volatile uint64_t*>(kPrivateBase);
  g_ext[0] = {MVMM_MMUEXT_NEW_BASEPTR, 0, base >> 12, 0};
  p.Call("mmuext_op NEW_BASEPTR", kNoTag, 1, MVMM_HC_mmuext_op, ops, 1);
  p.Expect("mmuext_op loaded CR3", kNoTag, cpu::ReadCr3(), base);
  p.Expect("mmuext_op: the new address space is live", kNoTag, *tagged, page[0]);
  g_ext[0] = {MVMM_MMUEXT_NEW_BASEPTR, 0, old_cr3 >> 12, 0};
  p.Call("mmuext_op back to the old base", kNoTag, 1, MVMM_HC_mmuext_op, ops, 1);
  p.Expect("mmuext_op restored CR3", kNoTag, cpu::ReadCr3(), old_cr3);

  p.Call("mmuext_op count 0", kNoTag, 0, MVMM_HC_mmuext_op, ~0ull, 0);
  p.Call("mmuext_op count 513", kNoTag, -MVMM_E2BIG, MVMM_HC_mmuext_op, ops, 513);
  p.Call("mmuext_op list outside RAM", kNoTag, -MVMM_EFAULT, MVMM_HC_mmuext_op, mem, 1);
  struct Bad {
    const char* what;
    mvmm_mmuext_op op;
    int64_t want;
  };
  const Bad bad[] = {
      {"mmuext_op TLB_FLUSH_LOCAL (unimplemented)", {6, 0, base >> 12, 0}, -MVMM_EINVAL},
      {"mmuext_op reserved set", {MVMM_MMUEXT_NEW_BASEPTR, 1, base >> 12, 0}, -MVMM_EINVAL},
      {"mmuext_op arg2 set", {MVMM_MMUEXT_NEW_BASEPTR, 0, base >> 12, 1}, -MVMM_EINVAL},
      {"mmuext_op frame outside RAM", {MVMM_MMUEXT_NEW_BASEPTR, 0, mem >> 12, 0}, -MVMM_EFAULT},
      {"mmuext_op the GDT frame",
       {MVMM_MMUEXT_NEW_BASEPTR, 0, g_boot.gdt_gpa >> 12, 0},
       -MVMM_EFAULT},
      {"mmuext_op the TSS frame", {MVMM_MMUEXT_NEW_BASEPTR, 0, MVMM_TSS_GPA >> 12, 0}, -MVMM_EPERM},
  };
  for (const Bad& b : bad) {
    // Alone, and after a good op that must not run either (all or nothing).
    g_ext[0] = b.op;
    p.Call(b.what, kNoTag, b.want, MVMM_HC_mmuext_op, ops, 1);
    g_ext[0] = {MVMM_MMUEXT_NEW_BASEPTR, 0, base >> 12, 0};
    g_ext[1] = b.op;
    p.Call(b.what, kNoTag, b.want, MVMM_HC_mmuext_op, ops, 2);
    p.Expect("mmuext_op refused: CR3 unchanged", kNoTag, cpu::ReadCr3(), old_cr3);
  }

  // From a multicall: the entry's CR3 reaches the vCPU too.
  g_ext[0] = {MVMM_MMUEXT_NEW_BASEPTR, 0, base >> 12, 0};
  g_ext[1] = {MVMM_MMUEXT_NEW_BASEPTR, 0, old_cr3 >> 12, 0};
  g_list[0] = {};
  g_list[0].op = MVMM_HC_mmuext_op;
  g_list[0].args[0] = ops;
  g_list[0].args[1] = 1;
  p.Expect("multicall of one mmuext_op", kNoTag, Multicall(reinterpret_cast<uintptr_t>(g_list), 1),
           0);
  p.Expect("multicall's mmuext_op result", kNoTag, static_cast<int64_t>(g_list[0].result), 1);
  p.Expect("multicall's mmuext_op loaded CR3", kNoTag, cpu::ReadCr3(), base);
  p.Expect("multicall's mmuext_op: the new address space is live", kNoTag, *tagged, page[0]);
  p.Call("mmuext_op back to the old base", kNoTag, 1, MVMM_HC_mmuext_op, ops + sizeof(g_ext[0]), 1);
  p.Expect("mmuext_op restored CR3", kNoTag, cpu::ReadCr3(), old_cr3);
}

void ProbeCpuState(Prober& p, uint64_t cr0) {
  // Nothing may use the FPU or take an interrupt while TS/EM/IF are probed.
  uint64_t flags = ArchLocalIrqSave();
  const uint64_t rflags = probe::ClearIf();
  uint64_t ts = (cr0 & probe::kCr0Ts) ? 1 : 0;
  p.Call("fpu_taskswitch set", kNoTag, 0, MVMM_HC_fpu_taskswitch, 1);
  p.Expect("fpu_taskswitch set TS", kNoTag, cpu::ReadCr0(), cr0 | probe::kCr0Ts);
  p.Call("fpu_taskswitch clear", kNoTag, 0, MVMM_HC_fpu_taskswitch, 0);
  p.Expect("fpu_taskswitch cleared TS", kNoTag, cpu::ReadCr0(), cr0 & ~probe::kCr0Ts);
  p.Call("fpu_taskswitch 2", kNoTag, -MVMM_EINVAL, MVMM_HC_fpu_taskswitch, 2);
  p.Call("fpu_taskswitch restore", kNoTag, 0, MVMM_HC_fpu_taskswitch, ts);

  p.Call("write_cr0 flip TS", kNoTag, 0, MVMM_HC_write_cr0, cr0 ^ probe::kCr0Ts);
  p.Expect("write_cr0 flipped TS", kNoTag, cpu::ReadCr0(), cr0 ^ probe::kCr0Ts);
  p.Call("write_cr0 restore", kNoTag, 0, MVMM_HC_write_cr0, cr0);
  p.Call("write_cr0 clear PG", kNoTag, -MVMM_EPERM, MVMM_HC_write_cr0, cr0 & ~probe::kCr0Pg);

  // set_segment_base: %fs reads through the base it set; a GS base or a
  // non-canonical one is refused. The kernel keeps nothing in %fs.
  static uint64_t fs_block = 0xf5ba5e0000000001ull;
  p.Call("set_segment_base fs", kNoTag, 0, MVMM_HC_set_segment_base, MVMM_SEGBASE_FS,
         reinterpret_cast<uint64_t>(&fs_block));
  uint64_t through_fs;
  asm volatile("movq %%fs:0, %0" : "=r"(through_fs));
  p.Expect("set_segment_base: %fs:0 reads the block", kNoTag, through_fs, fs_block);
  p.Call("set_segment_base gs", kNoTag, -MVMM_EINVAL, MVMM_HC_set_segment_base, 1, 0);
  p.Call("set_segment_base non-canonical", kNoTag, -MVMM_EINVAL, MVMM_HC_set_segment_base,
         MVMM_SEGBASE_FS, 1ull << 47);
  p.Call("set_segment_base 0", kNoTag, 0, MVMM_HC_set_segment_base, MVMM_SEGBASE_FS, 0);
  p.Call("write_cr0 clear WP", kNoTag, -MVMM_EPERM, MVMM_HC_write_cr0, cr0 & ~probe::kCr0Wp);
  p.Expect("write_cr0 left CR0 as it was", kNoTag, cpu::ReadCr0(), cr0);

  // set_if returns the previous IF (0 here: interrupts are off).
  p.Call("set_if 0 with IF clear", kNoTag, 0, MVMM_HC_set_if, 0);
  p.Call("set_if 1", kNoTag, 0, MVMM_HC_set_if, 1);
  p.Call("set_if 0 with IF set", kNoTag, 1, MVMM_HC_set_if, 0);
  p.Call("set_if 2", kNoTag, -MVMM_EINVAL, MVMM_HC_set_if, 2);
  p.Expect("IF is clear again", kNoTag, probe::CurrentIf(), 0);

  uint64_t rsp0 = g_boot.tss->rsp[0];
  p.Call("stack_switch current rsp0", kNoTag, 0, MVMM_HC_stack_switch, MVMM_SEL_KERNEL_DS, rsp0);
  p.Call("stack_switch ss 0", kNoTag, -MVMM_EINVAL, MVMM_HC_stack_switch, 0, rsp0);
  p.Call("stack_switch non-canonical rsp", kNoTag, -MVMM_EINVAL, MVMM_HC_stack_switch,
         MVMM_SEL_KERNEL_DS, 1ull << 47);
  p.Expect("TSS.rsp0 unchanged", kNoTag, g_boot.tss->rsp[0], rsp0);

  // A past deadline fires at once: block returns with it pending, and it is
  // delivered when IF comes back.
  p.Call("set_timer_op far future", kNoTag, 0, MVMM_HC_set_timer_op, ~0ull);
  p.Call("set_timer_op cancel", kNoTag, 0, MVMM_HC_set_timer_op, 0);
  p.Call("set_timer_op past deadline", kNoTag, 0, MVMM_HC_set_timer_op, 1);
  p.Call("sched_op block", kNoTag, 0, MVMM_HC_sched_op, MVMM_SCHEDOP_BLOCK, 0);
  probe::RestoreIf(rflags);
  ArchIrqRestore(flags);
}

void ProbeDescriptors(Prober& p) {
  const uint64_t slot7 = probe::GdtEntryGpa(MVMM_GDT_TLS_FIRST);
  const uint64_t old = ReadGdt(MVMM_GDT_TLS_FIRST);
  const uint64_t desc = MakeTlsDescriptor(0x1000, 0xfff) & ~kDescAccessed;
  p.Call("update_descriptor good", kNoTag, 0, MVMM_HC_update_descriptor, slot7, desc);
  p.Expect("update_descriptor stored it with the accessed bit", kNoTag, ReadGdt(MVMM_GDT_TLS_FIRST),
           desc | kDescAccessed);
  p.Call("update_descriptor zero", kNoTag, 0, MVMM_HC_update_descriptor, slot7, 0);
  p.Expect("update_descriptor stored zero", kNoTag, ReadGdt(MVMM_GDT_TLS_FIRST), 0);
  p.Call("update_descriptor misaligned", kNoTag, -MVMM_EINVAL, MVMM_HC_update_descriptor, slot7 + 4,
         desc);
  p.Call("update_descriptor below the GDT", kNoTag, -MVMM_EFAULT, MVMM_HC_update_descriptor, 0x1000,
         desc);
  p.Call("update_descriptor reserved slot", 3, -MVMM_EPERM, MVMM_HC_update_descriptor,
         probe::GdtEntryGpa(3), desc);
  p.Call("update_descriptor code segment", kNoTag, -MVMM_EINVAL, MVMM_HC_update_descriptor, slot7,
         desc | kDescTypeCode);
  p.Call("update_descriptor restore", kNoTag, 0, MVMM_HC_update_descriptor, slot7, old);
  p.Expect("TLS slot 7 restored", kNoTag, ReadGdt(MVMM_GDT_TLS_FIRST), old);
}

void ProbeMulticall(Prober& p, uint64_t mem, uint64_t cr0) {
  const uint64_t list = reinterpret_cast<uintptr_t>(g_list);
  const uint64_t cur_if = probe::CurrentIf();
  const uint64_t ts = (cr0 & probe::kCr0Ts) ? 1 : 0;
  struct Item {
    uint64_t op, a0, a1, a2;
    int64_t want;
  };
  const Item items[8] = {
      {MVMM_HC_set_if, cur_if, 0, 0, static_cast<int64_t>(cur_if)},
      {2, 0, 0, 0, -MVMM_ENOSYS},
      {MVMM_HC_update_descriptor, probe::GdtEntryGpa(3), 0, 0, -MVMM_EPERM},
      {MVMM_HC_multicall, list, 1, 0, -MVMM_EINVAL},  // nested
      {MVMM_HC_fpu_taskswitch, ts, 0, 0, 0},
      {MVMM_HC_stack_switch, MVMM_SEL_KERNEL_DS, g_boot.tss->rsp[0], 0, 0},
      {MVMM_HC_console_io, MVMM_CONSOLEIO_WRITE, 0, list, 0},
      {MVMM_HC_write_cr0, cr0 ^ probe::kCr0Pg, 0, 0, -MVMM_EPERM},
  };
  for (int i = 0; i < 8; ++i) {
    g_list[i] = {};
    g_list[i].op = items[i].op;
    g_list[i].result = 0x5a5a5a5a;  // must be overwritten
    g_list[i].args[0] = items[i].a0;
    g_list[i].args[1] = items[i].a1;
    g_list[i].args[2] = items[i].a2;
    g_list[i].args[5] = 0xdeadbeef;  // ignored by the VMM
  }
  p.Expect("multicall of 8 mixed entries", kNoTag, Multicall(list, 8), 0);
  for (int i = 0; i < 8; ++i) {
    p.Expect("multicall entry result", static_cast<uint64_t>(i),
             static_cast<int64_t>(g_list[i].result), items[i].want);
  }
  p.Expect("multicall count 0", kNoTag, Multicall(list, 0), 0);
  p.Expect("multicall count 513", kNoTag, Multicall(list, 513), -MVMM_E2BIG);
  p.Expect("multicall list outside RAM", kNoTag, Multicall(mem, 1), -MVMM_EFAULT);
}

void ProbeIo(Prober& p, uint64_t mem) {
  uint64_t text = reinterpret_cast<uintptr_t>(kConsoleText);
  uint64_t len = sizeof(kConsoleText) - 1;
  p.Call("console_io write", kNoTag, static_cast<int64_t>(len), MVMM_HC_console_io,
         MVMM_CONSOLEIO_WRITE, len, text);
  p.Call("console_io cmd 1", kNoTag, -MVMM_EINVAL, MVMM_HC_console_io, 1, len, text);
  p.Call("console_io 4097 bytes", kNoTag, -MVMM_E2BIG, MVMM_HC_console_io, MVMM_CONSOLEIO_WRITE,
         MVMM_CONSOLEIO_MAX_BYTES + 1, text);
  p.Call("console_io outside RAM", kNoTag, -MVMM_EFAULT, MVMM_HC_console_io, MVMM_CONSOLEIO_WRITE,
         1, mem);

  p.Call("sched_op yield", kNoTag, 0, MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD, 0);
  p.Call("sched_op cmd 4", kNoTag, -MVMM_EINVAL, MVMM_HC_sched_op, 4, 0);
  p.Call("sched_op yield_to itself", kNoTag, -MVMM_EINVAL, MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD_TO,
         CurrentCpu());
  p.Call("sched_op yield_to vCPU 32", kNoTag, -MVMM_EINVAL, MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD_TO,
         32);
  p.Call("sched_op shutdown 256", kNoTag, -MVMM_EINVAL, MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN,
         256);

  p.Call("report one entry", kNoTag, 1, MVMM_HC_report, reinterpret_cast<uintptr_t>(kReportText),
         sizeof(kReportText) - 1);
  p.Call("report empty", kNoTag, 0, MVMM_HC_report, reinterpret_cast<uintptr_t>(kReportText), 0);
  p.Call("report too long", kNoTag, -MVMM_E2BIG, MVMM_HC_report,
         reinterpret_cast<uintptr_t>(kReportText), MVMM_REPORT_MAX_BYTES + 1);
  p.Call("report outside RAM", kNoTag, -MVMM_EFAULT, MVMM_HC_report, mem, 8);
  p.Call("report malformed line", kNoTag, -MVMM_EINVAL, MVMM_HC_report,
         reinterpret_cast<uintptr_t>(kBadReport), sizeof(kBadReport) - 1);
}

// vcpu_op's refusals, and force_evtchn_callback, which needs a registered
// vcpu_info: under irq:shared the boot registered one (a second is refused),
// otherwise none is registered here (that would be for the rest of the run).
void ProbeVcpuInfo(Prober& p, uint64_t mem) {
  const uint64_t info = g_boot.vcpu_info_gpa;
  constexpr uint64_t kRegister = MVMM_VCPUOP_REGISTER_VCPU_INFO;
  p.Call("vcpu_op cmd 0", kNoTag, -MVMM_EINVAL, MVMM_HC_vcpu_op, 0, 0, info);
  p.Call("vcpu_op vcpu 1", kNoTag, -MVMM_ENOENT, MVMM_HC_vcpu_op, kRegister, 1, info);
  p.Call("vcpu_op misaligned vcpu_info", kNoTag, -MVMM_EINVAL, MVMM_HC_vcpu_op, kRegister, 0,
         info + 8);
  p.Call("vcpu_op vcpu_info at the end of RAM", kNoTag, -MVMM_EFAULT, MVMM_HC_vcpu_op, kRegister, 0,
         mem);
  p.Call("vcpu_op vcpu_info in the GDT page", kNoTag, -MVMM_EFAULT, MVMM_HC_vcpu_op, kRegister, 0,
         g_boot.gdt_gpa);
  if (PvIrqShared()) {
    p.Call("vcpu_op second registration", kNoTag, -MVMM_EINVAL, MVMM_HC_vcpu_op, kRegister, 0,
           info);
    p.Call("force_evtchn_callback", kNoTag, 0, MVMM_HC_force_evtchn_callback);
  } else {
    p.Call("force_evtchn_callback unregistered", kNoTag, -MVMM_EINVAL,
           MVMM_HC_force_evtchn_callback);
  }
}

// send_ipi to this CPU: taken right after the call with interrupts on; two
// sent with interrupts off merge and are taken once when they come back on
// (checked after the next exits: under native the window may open a few
// instructions after popf). Then the refusals that hold for any number of
// CPUs: an empty mask, a bit no VM has, another vector; flush_tlb_others
// of this CPU itself.
void ProbeIpis(Prober& p) {
  const uint64_t self = 1ull << CurrentCpu();
  const uint64_t before = Kc().ipis;
  p.Call("send_ipi to itself", kNoTag, 1, MVMM_HC_send_ipi, self, MVMM_IPI_VECTOR);
  p.Expect("send_ipi: taken right after the call", kNoTag, Kc().ipis - before, 1);
  const uint64_t flags = ArchLocalIrqSave();
  p.Call("send_ipi with interrupts off", kNoTag, 1, MVMM_HC_send_ipi, self, MVMM_IPI_VECTOR);
  p.Call("send_ipi again, pending", kNoTag, 1, MVMM_HC_send_ipi, self, MVMM_IPI_VECTOR);
  p.Expect("send_ipi: not taken with interrupts off", kNoTag, Kc().ipis - before, 1);
  ArchIrqRestore(flags);
  p.Call("send_ipi empty mask", kNoTag, -MVMM_EINVAL, MVMM_HC_send_ipi, 0, MVMM_IPI_VECTOR);
  p.Call("send_ipi to vCPU 32", kNoTag, -MVMM_EINVAL, MVMM_HC_send_ipi, self | 1ull << 32,
         MVMM_IPI_VECTOR);
  p.Call("send_ipi to vCPU 63", kNoTag, -MVMM_EINVAL, MVMM_HC_send_ipi, 1ull << 63,
         MVMM_IPI_VECTOR);
  p.Call("send_ipi timer vector", kNoTag, -MVMM_EINVAL, MVMM_HC_send_ipi, self, MVMM_TIMER_VECTOR);
  p.Call("send_ipi vector with high bits", kNoTag, -MVMM_EINVAL, MVMM_HC_send_ipi, self,
         MVMM_IPI_VECTOR | 1ull << 32);
  p.Expect("send_ipi: the two pending merged into one", kNoTag, Kc().ipis - before, 2);
  p.Call("flush_tlb_others empty mask", kNoTag, -MVMM_EINVAL, MVMM_HC_flush_tlb_others, 0);
  p.Call("flush_tlb_others of itself", kNoTag, -MVMM_EINVAL, MVMM_HC_flush_tlb_others, self);
  p.Call("flush_tlb_others of vCPU 32", kNoTag, -MVMM_EINVAL, MVMM_HC_flush_tlb_others, 1ull << 32);
  p.Expect("no IPI from a refused call", kNoTag, Kc().ipis - before, 2);
}

// lock_wait and lock_kick on any number of CPUs: a word that is not the
// expected value returns CHANGED; with an IPI pending (interrupts off) a
// wait on an unchanged word returns INTERRUPT at once, and the IPI is taken
// when interrupts come back on; the refusals. (A kick needs a second CPU:
// workload=lock.)
void ProbeLocks(Prober& p) {
  static uint32_t word = 7;
  const uint64_t gpa = reinterpret_cast<uint64_t>(&word);
  p.Call("lock_wait on a changed word", kNoTag, MVMM_LOCK_WAIT_CHANGED, MVMM_HC_lock_wait, gpa, 8);
  const uint64_t before = Kc().ipis;
  const uint64_t flags = ArchLocalIrqSave();
  p.Call("send_ipi to itself before lock_wait", kNoTag, 1, MVMM_HC_send_ipi, 1ull << CurrentCpu(),
         MVMM_IPI_VECTOR);
  p.Call("lock_wait with an IPI pending", kNoTag, MVMM_LOCK_WAIT_INTERRUPT, MVMM_HC_lock_wait, gpa,
         7);
  ArchIrqRestore(flags);
  p.Call("lock_wait misaligned", kNoTag, -MVMM_EINVAL, MVMM_HC_lock_wait, gpa + 2, 7);
  p.Call("lock_wait expected above a u32", kNoTag, -MVMM_EINVAL, MVMM_HC_lock_wait, gpa,
         7 | 1ull << 32);
  p.Call("lock_wait outside RAM", kNoTag, -MVMM_EFAULT, MVMM_HC_lock_wait, ~0ull - 3, 7);
  p.Call("lock_kick itself", kNoTag, -MVMM_EINVAL, MVMM_HC_lock_kick, CurrentCpu());
  p.Call("lock_kick vCPU 32", kNoTag, -MVMM_EINVAL, MVMM_HC_lock_kick, 32);
  p.Expect("lock_wait: the IPI taken once interrupts were back on", kNoTag, Kc().ipis - before, 1);
}

}  // namespace

void RunHcall(const WorkloadArgs&) {
  const uint64_t mem = g_boot.memory_size;
  const uint64_t cr0 = cpu::ReadCr0();
  WorkloadRecord rec("hcall");
  g_before = Hc();
  Prober p("hcall", Prober::Mode::kStopAtFirst);
  ProbeMmuUpdate(p, mem);
  ProbeMmuextOp(p, mem);
  ProbeCpuState(p, cr0);
  ProbeDescriptors(p);
  ProbeMulticall(p, mem, cr0);
  ProbeIo(p, mem);
  ProbeVcpuInfo(p, mem);
  ProbeIpis(p);
  ProbeLocks(p);
  p.Expect("CR0 at the end", kNoTag, cpu::ReadCr0(), cr0);
  PutHypercallDeltas(&rec, g_before);
  rec.Put("checks", p.checks());
  rec.Finish(p.checks());
}

}  // namespace guest
