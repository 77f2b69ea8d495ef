// workload=hostile[,floods=F]: a guest that throws every kind of
// bad argument at every hypercall (and bad stores at the GDT page) and
// checks that each gets exactly the answer hypercalls/handlers/*.cc
// documents. Unlike workload=hcall it does not stop at the first mismatch:
// each one prints a line, and the record reports hostile.checks and
// hostile.failures. Afterwards it checks that the state it aimed at (CR0,
// IF, TSS.rsp0, the GDT, a live PTE) is what it was, runs a short ctx ring
// to show the kernel still works, and shuts down with 1 if anything failed.
// Expects no embedder: numbers 64..127 must be unregistered.
#include "arch/cpu.h"
#include "kernel/boot.h"
#include "kernel/console.h"
#include "kernel/hypercall.h"
#include "kernel/mem.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"
#include "lib/desc.h"
#include "probes/probe.h"
#include "pv/pv_ops.h"
#include "workloads/workload.h"

namespace guest {
namespace {

using probe::GdtEntryGpa;
using probe::ReadGdt;
constexpr uint64_t kNoTag = Prober::kNoTag;
constexpr uint64_t kMax = ~0ull;

HypercallCounts g_before;
uint64_t g_gdt_stores = 0;  // native stores into the GDT page (all refused)

// What the probes aim at, and the addresses they use.
struct Env {
  uint64_t mem;       // RAM size: the first byte outside RAM
  uint64_t gdt;       // GDT page gpa (outside RAM)
  uint64_t pml4;      // a live page table (CR3)
  uint64_t* scratch;  // 8 pages of kernel memory for lists and buffers
  uint64_t* aux;      // one more page
  uint64_t boot_pt;   // the VMM's boot page tables: RAM, unused after boot
};

uint64_t Addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// A good TLS descriptor without its accessed bit, and the refused kinds.
constexpr uint64_t kGoodDesc = MakeTlsDescriptor(0x2000, 0xfff) & ~kDescAccessed;
constexpr uint64_t kDplMask = 3ull << kDescDplShift;

uint64_t SystemDesc(uint64_t type) {
  return (kGoodDesc & ~(0xfull << 40) & ~kDescS) | (type << 40);
}
uint64_t CodeDesc(uint64_t type) { return (kGoodDesc & ~(0xfull << 40)) | ((8 | type) << 40); }
uint64_t DplDesc(uint64_t dpl) { return (kGoodDesc & ~kDplMask) | (dpl << kDescDplShift); }

// Every descriptor kind a TLS slot refuses: 16 system types, 8 code types,
// DPL 0-2 data, a not-present data segment, L set on data.
int BadDescriptors(uint64_t out[32]) {
  int n = 0;
  for (uint64_t t = 0; t < 16; ++t) out[n++] = SystemDesc(t);
  for (uint64_t t = 0; t < 8; ++t) out[n++] = CodeDesc(t);
  for (uint64_t d = 0; d < 3; ++d) out[n++] = DplDesc(d);
  out[n++] = kGoodDesc & ~kDescPresent;
  out[n++] = kGoodDesc | (1ull << 53);
  return n;
}

void ProbeNumbers(Prober& p) {
  const uint64_t bad[] = {
      0, 2, 63, MVMM_HC_USER_FIRST, MVMM_HC_USER_LAST, MVMM_HC_MAX, 0xffffffffull};
  for (uint64_t nr : bad) p.Call("unregistered hypercall number", nr, -MVMM_ENOSYS, nr);
  // The number is EAX: RAX's high bits are ignored either way.
  p.Call("high RAX bits, EAX 0", kNoTag, -MVMM_ENOSYS, 1ull << 32);
  p.Call("high RAX bits, EAX 0xffffffff", kNoTag, -MVMM_ENOSYS, kMax);
  p.Call("high RAX bits, EAX sched_op yield", kNoTag, 0, (0xdeadull << 32) | MVMM_HC_sched_op,
         MVMM_SCHEDOP_YIELD);
}

void ProbeConsole(Prober& p, const Env& e, uint64_t floods) {
  const uint64_t w = MVMM_CONSOLEIO_WRITE;
  const uint64_t buf = Addr(e.scratch);
  p.Call("console_io cmd 1", kNoTag, -MVMM_EINVAL, MVMM_HC_console_io, 1, 1, buf);
  p.Call("console_io cmd ~0", kNoTag, -MVMM_EINVAL, MVMM_HC_console_io, kMax, 1, buf);
  p.Call("console_io 4097 bytes", kNoTag, -MVMM_E2BIG, MVMM_HC_console_io, w, 4097, buf);
  p.Call("console_io ~0 bytes", kNoTag, -MVMM_E2BIG, MVMM_HC_console_io, w, kMax, buf);
  p.Call("console_io 2^63 bytes at ~0", kNoTag, -MVMM_E2BIG, MVMM_HC_console_io, w, 1ull << 63,
         kMax);
  p.Call("console_io outside RAM", kNoTag, -MVMM_EFAULT, MVMM_HC_console_io, w, 1, e.mem);
  p.Call("console_io crossing the end of RAM", kNoTag, -MVMM_EFAULT, MVMM_HC_console_io, w, 4,
         e.mem - 2);
  p.Call("console_io gpa + count wraps", kNoTag, -MVMM_EFAULT, MVMM_HC_console_io, w, 16, kMax - 7);
  p.Call("console_io from the GDT page", kNoTag, -MVMM_EFAULT, MVMM_HC_console_io, w, 8, e.gdt);
  p.Call("console_io 0 bytes at the end of RAM", kNoTag, 0, MVMM_HC_console_io, w, 0, e.mem);
  p.Call("console_io 0 bytes past the end of RAM", kNoTag, -MVMM_EFAULT, MVMM_HC_console_io, w, 0,
         e.mem + 1);
  // Floods of the largest write: lines of dots, 4096 bytes a call.
  char* text = reinterpret_cast<char*>(e.scratch);
  for (int i = 0; i < 4096; ++i) text[i] = (i % 64 == 63) ? '\n' : '.';
  for (uint64_t i = 0; i < floods; ++i) {
    p.Call("console_io 4096 bytes", i, MVMM_CONSOLEIO_MAX_BYTES, MVMM_HC_console_io, w,
           MVMM_CONSOLEIO_MAX_BYTES, buf);
  }
}

void ProbeReport(Prober& p, const Env& e) {
  static const char kBad[][24] = {"no equals sign\n", "bad key=1\n", "k=tab\tok\rcr\n",
                                  "k=\xff\xfe\n", "=empty key\n"};
  static const int64_t kWant[] = {-MVMM_EINVAL, -MVMM_EINVAL, -MVMM_EINVAL, -MVMM_EINVAL,
                                  -MVMM_EINVAL};
  for (int i = 0; i < 5; ++i) {
    p.Call("report malformed", static_cast<uint64_t>(i), kWant[i], MVMM_HC_report, Addr(kBad[i]),
           StrLen(kBad[i]));
  }
  const uint64_t buf = Addr(e.scratch);
  p.Call("report 16385 bytes", kNoTag, -MVMM_E2BIG, MVMM_HC_report, buf, MVMM_REPORT_MAX_BYTES + 1);
  p.Call("report ~0 bytes", kNoTag, -MVMM_E2BIG, MVMM_HC_report, buf, kMax);
  p.Call("report outside RAM", kNoTag, -MVMM_EFAULT, MVMM_HC_report, e.mem, 4);
  p.Call("report crossing the end of RAM", kNoTag, -MVMM_EFAULT, MVMM_HC_report, e.mem - 2, 4);
  p.Call("report gpa + len wraps", kNoTag, -MVMM_EFAULT, MVMM_HC_report, kMax - 1, 4);
  p.Call("report from the GDT page", kNoTag, -MVMM_EFAULT, MVMM_HC_report, e.gdt, 8);
  static const char kGood[] = "hostile.report_probe=1\n";
  p.Call("report good", kNoTag, 1, MVMM_HC_report, Addr(kGood), sizeof(kGood) - 1);
}

void ProbeSchedAndTimer(Prober& p) {
  p.Call("sched_op cmd 4", kNoTag, -MVMM_EINVAL, MVMM_HC_sched_op, 4, 0);
  p.Call("sched_op yield_to ~0", kNoTag, -MVMM_EINVAL, MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD_TO,
         kMax);
  p.Call("sched_op cmd ~0", kNoTag, -MVMM_EINVAL, MVMM_HC_sched_op, kMax, 0);
  p.Call("sched_op shutdown 256", kNoTag, -MVMM_EINVAL, MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN,
         256);
  p.Call("sched_op shutdown ~0", kNoTag, -MVMM_EINVAL, MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN,
         kMax);
  p.Call("sched_op yield", kNoTag, 0, MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD, kMax);
  p.Call("set_timer_op ~0", kNoTag, 0, MVMM_HC_set_timer_op, kMax);
  p.Call("set_timer_op cancel", kNoTag, 0, MVMM_HC_set_timer_op, 0);
}

void ProbeCpuState(Prober& p, uint64_t cr0) {
  uint64_t flags = ArchLocalIrqSave();
  const uint64_t rflags = probe::ClearIf();
  const uint64_t bits[] = {probe::kCr0Pg,       probe::kCr0Pe,       probe::kCr0Wp,
                           1ull << 5 /* NE */,  1ull << 4 /* ET */,  1ull << 29 /* NW */,
                           1ull << 30 /* CD */, 1ull << 18 /* AM */, 1ull << 32,
                           1ull << 63};
  int i = 0;
  for (uint64_t bit : bits)
    p.Call("write_cr0 flips a VMM-owned bit", i++, -MVMM_EPERM, MVMM_HC_write_cr0, cr0 ^ bit);
  p.Call("write_cr0 PE and PG off", kNoTag, -MVMM_EPERM, MVMM_HC_write_cr0,
         cr0 & ~(probe::kCr0Pe | probe::kCr0Pg));
  p.Call("write_cr0 0", kNoTag, -MVMM_EPERM, MVMM_HC_write_cr0, 0);
  p.Call("write_cr0 ~0", kNoTag, -MVMM_EPERM, MVMM_HC_write_cr0, kMax);
  p.Call("write_cr0 unchanged", kNoTag, 0, MVMM_HC_write_cr0, cr0);
  p.Expect("CR0 unchanged after write_cr0", kNoTag, cpu::ReadCr0(), cr0);

  const uint64_t not_fs[] = {1, 2, 3, kMax};
  for (uint64_t which : not_fs)
    p.Call("set_segment_base not FS", kNoTag, -MVMM_EINVAL, MVMM_HC_set_segment_base, which, 0);
  const uint64_t non_canonical[] = {1ull << 47, 1ull << 63, kMax >> 1, 0xffff7fffffffffffull};
  for (uint64_t base : non_canonical)
    p.Call("set_segment_base non-canonical", kNoTag, -MVMM_EINVAL, MVMM_HC_set_segment_base,
           MVMM_SEGBASE_FS, base);

  p.Call("fpu_taskswitch 2", kNoTag, -MVMM_EINVAL, MVMM_HC_fpu_taskswitch, 2);
  p.Call("fpu_taskswitch ~0", kNoTag, -MVMM_EINVAL, MVMM_HC_fpu_taskswitch, kMax);
  p.Expect("CR0 unchanged after fpu_taskswitch", kNoTag, cpu::ReadCr0(), cr0);

  p.Call("set_if 2", kNoTag, -MVMM_EINVAL, MVMM_HC_set_if, 2);
  p.Call("set_if ~0", kNoTag, -MVMM_EINVAL, MVMM_HC_set_if, kMax);
  p.Call("set_if 0 with IF clear", kNoTag, 0, MVMM_HC_set_if, 0);
  p.Expect("IF still clear", kNoTag, probe::CurrentIf(), 0);

  const uint64_t rsp0 = g_boot.tss->rsp[0];
  const uint64_t kds = MVMM_SEL_KERNEL_DS;
  p.Call("stack_switch ss 0", kNoTag, -MVMM_EINVAL, MVMM_HC_stack_switch, 0, rsp0);
  p.Call("stack_switch ss user data", kNoTag, -MVMM_EINVAL, MVMM_HC_stack_switch, MVMM_SEL_USER_DS,
         rsp0);
  p.Call("stack_switch ss with high bits", kNoTag, -MVMM_EINVAL, MVMM_HC_stack_switch,
         kds | (1ull << 32), rsp0);
  p.Call("stack_switch rsp 2^47", kNoTag, -MVMM_EINVAL, MVMM_HC_stack_switch, kds, 1ull << 47);
  p.Call("stack_switch rsp 2^63", kNoTag, -MVMM_EINVAL, MVMM_HC_stack_switch, kds, 1ull << 63);
  p.Call("stack_switch current rsp0", kNoTag, 0, MVMM_HC_stack_switch, kds, rsp0);
  p.Expect("TSS.rsp0 unchanged", kNoTag, g_boot.tss->rsp[0], rsp0);
  probe::RestoreIf(rflags);
  ArchIrqRestore(flags);
}

void ProbeDescriptors(Prober& p, const Env& e) {
  const uint64_t nr = MVMM_HC_update_descriptor;
  const uint64_t slot7 = GdtEntryGpa(MVMM_GDT_TLS_FIRST);
  uint64_t before[MVMM_GDT_ENTRIES];
  for (uint64_t s = 0; s < MVMM_GDT_ENTRIES; ++s) before[s] = ReadGdt(s);

  uint64_t bad[32];
  int n = BadDescriptors(bad);
  for (int i = 0; i < n; ++i)
    p.Call("update_descriptor refused kind", i, -MVMM_EINVAL, nr, slot7, bad[i]);
  for (uint64_t s = 0; s < MVMM_GDT_TLS_FIRST; ++s) {
    p.Call("update_descriptor reserved slot", s, -MVMM_EPERM, nr, GdtEntryGpa(s), kGoodDesc);
  }
  p.Call("update_descriptor slot 10", kNoTag, -MVMM_EPERM, nr, GdtEntryGpa(10), kGoodDesc);
  p.Call("update_descriptor slot 511", kNoTag, -MVMM_EPERM, nr, GdtEntryGpa(511), kGoodDesc);
  p.Call("update_descriptor past the GDT page", kNoTag, -MVMM_EFAULT, nr, GdtEntryGpa(512),
         kGoodDesc);
  p.Call("update_descriptor misaligned", kNoTag, -MVMM_EINVAL, nr, slot7 + 1, kGoodDesc);
  p.Call("update_descriptor ~0", kNoTag, -MVMM_EINVAL, nr, kMax, kGoodDesc);
  p.Call("update_descriptor 2^64 - 8", kNoTag, -MVMM_EFAULT, nr, kMax - 7, kGoodDesc);
  p.Call("update_descriptor gpa 0", kNoTag, -MVMM_EFAULT, nr, 0, kGoodDesc);
  p.Call("update_descriptor into the page tables", kNoTag, -MVMM_EFAULT, nr, e.pml4, kGoodDesc);
  p.Call("update_descriptor into RAM's last slot", kNoTag, -MVMM_EFAULT, nr, e.mem - 8, kGoodDesc);
  for (uint64_t s = 0; s < MVMM_GDT_ENTRIES; ++s)
    p.Expect("GDT entry unchanged by refusals", s, ReadGdt(s), before[s]);

  // The same refused kinds as plain stores (the native path): each exits as
  // an MMIO write that the VMM drops. Wrong sizes and a misaligned store too.
  auto store8 = [](uint64_t gpa, uint64_t v) {
    asm volatile("movq %1, (%0)" ::"r"(gpa), "r"(v) : "memory");
    ++g_gdt_stores;
  };
  for (int i = 0; i < n; ++i) store8(slot7, bad[i]);
  for (uint64_t s = 0; s < MVMM_GDT_TLS_FIRST; ++s) store8(GdtEntryGpa(s), kGoodDesc);
  store8(GdtEntryGpa(10), kGoodDesc);
  store8(slot7 + 4, kGoodDesc);  // misaligned
  asm volatile("movl %1, (%0)" ::"r"(slot7), "r"(static_cast<uint32_t>(kGoodDesc)) : "memory");
  asm volatile("movw %1, (%0)" ::"r"(slot7), "r"(static_cast<uint16_t>(kGoodDesc)) : "memory");
  asm volatile("movb %1, (%0)" ::"r"(slot7), "q"(static_cast<uint8_t>(kGoodDesc)) : "memory");
  g_gdt_stores += 3;
  for (uint64_t s = 0; s < MVMM_GDT_ENTRIES; ++s)
    p.Expect("GDT entry unchanged by stores", s, ReadGdt(s), before[s]);

  // A good one, then the slot back as it was.
  p.Call("update_descriptor good", kNoTag, 0, nr, slot7, kGoodDesc);
  p.Expect("stored with the accessed bit", kNoTag, ReadGdt(MVMM_GDT_TLS_FIRST),
           kGoodDesc | kDescAccessed);
  p.Call("update_descriptor restore", kNoTag, 0, nr, slot7, before[MVMM_GDT_TLS_FIRST]);
  p.Expect("TLS slot 7 restored", kNoTag, ReadGdt(MVMM_GDT_TLS_FIRST), before[MVMM_GDT_TLS_FIRST]);
}

void ProbeMmuUpdate(Prober& p, const Env& e) {
  const uint64_t nr = MVMM_HC_mmu_update;
  auto* reqs = reinterpret_cast<mvmm_mmu_update*>(e.scratch + 512);  // page 1
  uint64_t* target = e.scratch + 1024;                               // page 2: "PTEs" to write
  for (int i = 0; i < 8; ++i) target[i] = 0;
  const uint64_t list = Addr(reqs);
  uint64_t* live = LookupPte(CpaArena().start);
  const uint64_t live_val = *live;
  uint64_t* gdt_pte = LookupPte(e.gdt);  // mapped by MemInit under minivmm
  GUEST_ASSERT(gdt_pte != nullptr && live != nullptr);
  const uint64_t gdt_pte_val = *gdt_pte;
  const uint64_t pw = kPtePresent | kPteWrite;

  p.Call("mmu_update count 513", kNoTag, -MVMM_E2BIG, nr, list, 513);
  p.Call("mmu_update count 2^60 (count*16 wraps)", kNoTag, -MVMM_E2BIG, nr, list, 1ull << 60);
  p.Call("mmu_update count ~0", kNoTag, -MVMM_E2BIG, nr, list, kMax);
  p.Call("mmu_update count 0, list anywhere", kNoTag, 0, nr, kMax, 0);
  p.Call("mmu_update list outside RAM", kNoTag, -MVMM_EFAULT, nr, e.mem, 1);
  p.Call("mmu_update list crossing the end of RAM", kNoTag, -MVMM_EFAULT, nr, e.mem - 8, 1);
  p.Call("mmu_update list + len wraps", kNoTag, -MVMM_EFAULT, nr, kMax - 7, 1);
  p.Call("mmu_update list in the GDT page", kNoTag, -MVMM_EFAULT, nr, e.gdt, 1);

  struct Case {
    const char* what;
    uint64_t ptr, val;
    int64_t want;
  };
  const Case cases[] = {
      {"mmu_update misaligned ptr", Addr(target) + 1, 0, -MVMM_EINVAL},
      {"mmu_update ptr outside RAM", e.mem, 0, -MVMM_EFAULT},
      {"mmu_update ptr crossing the end of RAM", e.mem - 4, 0,
       -MVMM_EINVAL},  // misalignment is checked first
      {"mmu_update ptr into the GDT page", e.gdt + 8 * MVMM_GDT_TLS_FIRST, 0, -MVMM_EFAULT},
      {"mmu_update ptr 2^64 - 8", kMax - 7, 0, -MVMM_EFAULT},
      {"mmu_update PS bit", Addr(target), pw | kPteHuge, -MVMM_EINVAL},
      {"mmu_update frame outside RAM", Addr(target), e.mem | pw, -MVMM_EPERM},
      {"mmu_update frame = GDT page", Addr(target), e.gdt | pw, -MVMM_EPERM},
      {"mmu_update highest frame", Addr(target), kPteAddrMask | pw, -MVMM_EPERM},
      {"mmu_update live PTE to outside RAM", Addr(live), e.mem | pw, -MVMM_EPERM},
      {"mmu_update GDT PTE rewritten", Addr(gdt_pte), gdt_pte_val, -MVMM_EPERM},
      {"mmu_update live PML4 entry to outside RAM", e.pml4, (e.mem + (1ull << 30)) | pw,
       -MVMM_EPERM},
      {"mmu_update last RAM page", Addr(target), (e.mem - kPageSize) | pw | kPteNx, 1},
      {"mmu_update not present, any bits", Addr(target) + 8, kMax - 1, 1},
  };
  for (const Case& c : cases) {
    reqs[0] = {c.ptr, c.val};
    p.Call(c.what, kNoTag, c.want, nr, list, 1);
  }
  p.Expect("the accepted values landed", 0, target[0],
           static_cast<int64_t>((e.mem - kPageSize) | pw | kPteNx));
  p.Expect("the accepted values landed", 1, target[1], static_cast<int64_t>(kMax - 1));
  p.Expect("live PTE unchanged", kNoTag, *live, live_val);
  p.Expect("GDT PTE unchanged", kNoTag, *gdt_pte, gdt_pte_val);

  // Stops at the first refused request; the result is the count done.
  reqs[0] = {Addr(&target[2]), 0x1110};
  reqs[1] = {Addr(&target[3]), 0x2220};
  reqs[2] = {Addr(&target[4]), e.mem | pw};
  reqs[3] = {Addr(&target[5]), 0x4440};
  p.Call("mmu_update 2 good, 1 bad, 1 good", kNoTag, 2, nr, list, 4);
  p.Expect("done before the refusal", kNoTag, target[3], 0x2220);
  p.Expect("nothing after the refusal", kNoTag, target[5], 0);

  // A request list inside the VMM's boot page tables (RAM, unused now).
  auto* boot_reqs = reinterpret_cast<mvmm_mmu_update*>(e.boot_pt);
  boot_reqs[0] = {Addr(&target[6]), 0x6660};
  p.Call("mmu_update list in the boot page tables", kNoTag, 1, nr, e.boot_pt, 1);
  p.Expect("boot-page-table list applied", kNoTag, target[6], 0x6660);
}

// Fills entry `i` of `list`.
void SetEntry(mvmm_multicall_entry* list, int i, uint64_t op, uint64_t a0 = 0, uint64_t a1 = 0,
              uint64_t a2 = 0) {
  list[i] = {};
  list[i].op = op;
  list[i].result = 0x5a5a5a5a5a5a5a5aull;
  list[i].args[0] = a0;
  list[i].args[1] = a1;
  list[i].args[2] = a2;
  list[i].args[5] = kMax;  // ignored
}

void ProbeMulticall(Prober& p, const Env& e, uint64_t cr0) {
  auto* list = reinterpret_cast<mvmm_multicall_entry*>(e.scratch);  // 8 pages: 512 entries
  const uint64_t l = Addr(list);
  auto mc = [&](const char* what, uint64_t gpa, uint64_t count, int64_t want) {
    p.Expect(what, kNoTag, Multicall(gpa, count), want);
  };
  mc("multicall count 513", l, 513, -MVMM_E2BIG);
  mc("multicall count 2^58 (count*64 wraps)", l, 1ull << 58, -MVMM_E2BIG);
  mc("multicall count ~0", l, kMax, -MVMM_E2BIG);
  mc("multicall count 0, list anywhere", kMax, 0, 0);
  mc("multicall list outside RAM", e.mem, 1, -MVMM_EFAULT);
  mc("multicall list crossing the end of RAM", e.mem - 32, 1, -MVMM_EFAULT);
  mc("multicall list + len wraps", kMax - 63, 1, -MVMM_EFAULT);
  mc("multicall list in the GDT page", e.gdt, 1, -MVMM_EFAULT);

  // Mixed entries: none stops the batch; each gets its own answer.
  struct Item {
    uint64_t op, a0, a1, a2;
    int64_t want;
  };
  const Item items[] = {
      {0, 0, 0, 0, -MVMM_ENOSYS},
      {MVMM_HC_USER_FIRST, 1, 10, 0, -MVMM_ENOSYS},
      {MVMM_HC_MAX, 0, 0, 0, -MVMM_ENOSYS},
      {(1ull << 32) | MVMM_HC_sched_op, 0, 0, 0, -MVMM_ENOSYS},  // entries' op is 64 bits wide
      {kMax, 0, 0, 0, -MVMM_ENOSYS},
      {MVMM_HC_multicall, l, 1, 0, -MVMM_EINVAL},  // nested
      {MVMM_HC_multicall, l, 0, 0, -MVMM_EINVAL},  // nested, empty
      {MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 256, 0, -MVMM_EINVAL},
      {MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD, 0, 0, 0},
      {MVMM_HC_set_if, 2, 0, 0, -MVMM_EINVAL},
      {MVMM_HC_console_io, MVMM_CONSOLEIO_WRITE, 5000, l, -MVMM_E2BIG},
      {MVMM_HC_console_io, MVMM_CONSOLEIO_WRITE, 0, l, 0},
      {MVMM_HC_update_descriptor, GdtEntryGpa(1), kGoodDesc, 0, -MVMM_EPERM},
      {MVMM_HC_update_descriptor, GdtEntryGpa(MVMM_GDT_TLS_FIRST), SystemDesc(9), 0, -MVMM_EINVAL},
      {MVMM_HC_mmu_update, e.mem, 1, 0, -MVMM_EFAULT},
      {MVMM_HC_write_cr0, cr0 ^ probe::kCr0Pg, 0, 0, -MVMM_EPERM},
      {MVMM_HC_fpu_taskswitch, 7, 0, 0, -MVMM_EINVAL},
      {MVMM_HC_stack_switch, 0, 0, 0, -MVMM_EINVAL},
      {MVMM_HC_report, l, kMax, 0, -MVMM_E2BIG},
      {MVMM_HC_set_timer_op, 0, 0, 0, 0},
  };
  constexpr int kItems = sizeof(items) / sizeof(items[0]);
  for (int i = 0; i < kItems; ++i)
    SetEntry(list, i, items[i].op, items[i].a0, items[i].a1, items[i].a2);
  mc("multicall of mixed entries", l, kItems, 0);
  for (int i = 0; i < kItems; ++i) {
    p.Expect("multicall entry result", static_cast<uint64_t>(i),
             static_cast<int64_t>(list[i].result), items[i].want);
  }

  // The list is copied once: entry 0 rewrites entry 1's op in guest memory
  // (with mmu_update: an 8-aligned store of a not-present value), but the
  // VMM runs the copy, so entry 1 still runs as sched_op yield.
  auto* req = reinterpret_cast<mvmm_mmu_update*>(e.aux);
  *req = {Addr(&list[1].op), 2};
  SetEntry(list, 0, MVMM_HC_mmu_update, Addr(req), 1);
  SetEntry(list, 1, MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD, 0);
  mc("multicall that rewrites itself", l, 2, 0);
  p.Expect("self-rewrite: entry 0 done", kNoTag, static_cast<int64_t>(list[0].result), 1);
  p.Expect("self-rewrite: entry 1 ran from the copy", kNoTag, static_cast<int64_t>(list[1].result),
           0);
  p.Expect("self-rewrite: entry 1's op was rewritten", kNoTag, static_cast<int64_t>(list[1].op), 2);

  // The largest list: 512 harmless entries (empty console writes).
  for (int i = 0; i < 512; ++i) SetEntry(list, i, MVMM_HC_console_io, MVMM_CONSOLEIO_WRITE, 0, l);
  mc("multicall of 512 entries", l, 512, 0);
  uint64_t wrong = 0;
  for (int i = 0; i < 512; ++i) wrong += list[i].result != 0;
  p.Expect("512 entries succeeded (count of the others)", kNoTag, static_cast<int64_t>(wrong), 0);

  // A list inside the VMM's boot page tables (RAM, unused after boot).
  auto* boot_list = reinterpret_cast<mvmm_multicall_entry*>(e.boot_pt + kPageSize);
  SetEntry(boot_list, 0, MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD, 0);
  SetEntry(boot_list, 1, MVMM_HC_multicall, l, 1);
  mc("multicall list in the boot page tables", Addr(boot_list), 2, 0);
  p.Expect("boot-page-table list entry 0", kNoTag, static_cast<int64_t>(boot_list[0].result), 0);
  p.Expect("boot-page-table list entry 1", kNoTag, static_cast<int64_t>(boot_list[1].result),
           -MVMM_EINVAL);
}

}  // namespace

void RunHostile(const WorkloadArgs& args) {
  Env e;
  e.mem = g_boot.memory_size;
  e.gdt = g_boot.gdt_gpa;
  e.pml4 = cpu::ReadCr3();
  e.scratch = static_cast<uint64_t*>(AllocPages(8));
  e.aux = static_cast<uint64_t*>(AllocPages(1));
  e.boot_pt = MVMM_PAGE_TABLES_GPA;
  const uint64_t cr0 = cpu::ReadCr0();
  const uint64_t if_before = probe::CurrentIf();
  const uint64_t rsp0 = g_boot.tss->rsp[0];

  WorkloadRecord rec("hostile");
  g_before = Hc();
  g_gdt_stores = 0;
  Prober p("hostile", Prober::Mode::kCountAll);
  ProbeNumbers(p);
  ProbeConsole(p, e, args.Get("floods"));
  ProbeReport(p, e);
  ProbeSchedAndTimer(p);
  ProbeCpuState(p, cr0);
  ProbeDescriptors(p, e);
  ProbeMmuUpdate(p, e);
  ProbeMulticall(p, e, cr0);
  p.Expect("CR0 at the end", kNoTag, cpu::ReadCr0(), cr0);
  p.Expect("IF at the end", kNoTag, probe::CurrentIf(), if_before);
  p.Expect("TSS.rsp0 at the end", kNoTag, g_boot.tss->rsp[0], rsp0);

  PutHypercallDeltas(&rec, g_before);
  rec.Put("gdt_stores_rejected", g_gdt_stores);
  rec.Put("checks", p.checks());
  rec.Put("failures", p.failures());
  Kc().check_failures += p.failures();
  rec.Finish(p.checks() - p.failures(), p.failures());

  // The kernel still works: a short ring of two ring-3 tasks (its own record).
  WorkloadArgs ctx;
  ctx.spec = FindWorkload("ctx");
  for (int i = 0; i < ctx.spec->param_count; ++i) ctx.values[i] = ctx.spec->params[i].default_value;
  ctx.values[1] = 2;  // rounds
  RunRing("ctx", 2, ctx);

  if (p.failures() != 0) {
    char storage[80];
    TextBuf msg(storage, sizeof(storage));
    msg.Str("hostile: ").Dec(p.failures()).Str(" of ").Dec(p.checks()).Str(" checks failed");
    Fatal(kExitCheckFailed, msg.View());
  }
}

}  // namespace guest
