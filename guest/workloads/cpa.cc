// workload=cpa (change_page_attr): walk R pages of 4 KiB PTEs reading
// pte_flags() (the pte_flags variant), set NX on each, flush
// the TLB, verify, then clear NX the same way. Each change is a ModifyPte
// (the pte_modify variant: one set_pte, or a clear and then the write). Each walk runs in lazy MMU
// mode, so with batch=on under pv its R mmu_updates go out as one
// multicall (per MulticallBatch::kCapacity entries).
// Each new entry is built as Linux's __change_page_attr builds it,
// pfn_pte(pte_pfn(old), new flags): pte_val (the m2p under pv) for the
// frame, make_pte (the p2m) for the value written. The arena is the pool
// whose machine frames differ from its pseudo-physical ones under pv
// (lib/physmap.h), and MemInit tagged each page with its own address, so a
// translation that is wrong either way maps the page at another frame and
// the tag check after the walk sees another page's tag.
// A separate timing loop measures pte_flags() alone (calls x R per round).
#include "arch/cpu.h"
#include "kernel/mem.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"
#include "kernel/sched.h"
#include "kernel/syscall.h"
#include "kernel/syscall_abi.h"
#include "pv/pv_ops.h"
#include "workloads/workload.h"

namespace guest {
namespace {

// The pseudo-physical address of the page a present entry maps: Linux's
// pte_pfn(), pte_val() through a recorded call site in every variant.
uint64_t PtePhys(uint64_t pte) { return PvPteVal(pte) & kPteAddrMask; }

// `pte_flags`: the pte_flags variant's accessor (pv/pv_ops.h WithPteFlags),
// here and below.
template <typename PteFlags>
uint64_t Walk(PteFlags pte_flags, const Arena& arena, uint64_t pages, bool set_nx) {
  uint64_t changed = 0;
  pv_ops.enter_lazy_mmu();
  for (uint64_t p = 0; p < pages; ++p) {
    uint64_t va = arena.start + p * kPageSize;
    uint64_t* ptep = LookupPte(va);
    GUEST_ASSERT(ptep != nullptr);
    uint64_t pte = *ptep;
    uint64_t flags = pte_flags(pte);
    // Every variant must give the entry's own flags bits.
    if (flags != (pte & kPteFlagsMask)) SelfCheckFailed(Current(), kCheckPteFlags);
    bool has_nx = (flags & kPteNx) != 0;
    if (has_nx != set_nx) {
      // The kernel maps its pages at their pseudo-physical addresses.
      uint64_t pa = PtePhys(pte);
      if (pa != va) SelfCheckFailed(Current(), kCheckPteVal);
      ModifyPte(ptep, MakePte(pa | (set_nx ? (flags | kPteNx) : (flags & ~kPteNx))));
      ++changed;
    }
  }
  pv_ops.leave_lazy_mmu();
  pv_ops.flush_tlb();
  return changed;
}

// After a walk: NX as asked in every entry, and every page (read through
// its new entry) holds the tag MemInit stored at its frame.
void CheckWalk(const Arena& arena, uint64_t pages, bool nx) {
  for (uint64_t p = 0; p < pages; ++p) {
    uint64_t va = arena.start + p * kPageSize;
    bool has_nx = (*LookupPte(va) & kPteNx) != 0;
    if (has_nx != nx)
      Panic(nx ? "cpa: NX not set after the walk" : "cpa: NX still set after the walk");
    if (*reinterpret_cast<volatile uint64_t*>(va) != va) SelfCheckFailed(Current(), kCheckPageData);
  }
}

template <typename PteFlags>
uint64_t TimePteFlags(PteFlags pte_flags, const Arena& arena, uint64_t pages, uint64_t calls,
                      uint64_t* sink) {
  uint64_t acc = 0;
  uint64_t t0 = cpu::Rdtsc();
  for (uint64_t c = 0; c < calls; ++c) {
    for (uint64_t p = 0; p < pages; ++p) acc += pte_flags(*LookupPte(arena.start + p * kPageSize));
  }
  *sink = acc;
  return cpu::Rdtsc() - t0;
}

struct CpaResult {
  uint64_t changed;
  uint64_t tsc;
  uint64_t flags_sum;  // of the timed pte_flags() results
};

template <typename PteFlags>
CpaResult Run(PteFlags pte_flags, const Arena& arena, uint64_t pages, uint64_t rounds,
              uint64_t calls, uint64_t* checks) {
  CpaResult r = {0, 0, 0};
  for (uint64_t i = 0; i < rounds; ++i) {
    r.changed += Walk(pte_flags, arena, pages, true);
    CheckWalk(arena, pages, true);
    r.changed += Walk(pte_flags, arena, pages, false);
    CheckWalk(arena, pages, false);
    *checks += 2;
  }
  r.tsc = TimePteFlags(pte_flags, arena, pages, calls, &r.flags_sum);
  return r;
}

}  // namespace

void RunCpa(const WorkloadArgs& args) {
  uint64_t pages = args.Get("pages");
  uint64_t rounds = args.Get("rounds");
  uint64_t calls = args.Get("calls");
  Arena arena = CpaArena();
  WorkloadRecord rec("cpa");
  uint64_t checks = 0;
  const CpaResult r = WithPteFlags(
      [&](auto pte_flags) { return Run(pte_flags, arena, pages, rounds, calls, &checks); });
  rec.Put("pages", pages);
  rec.Put("rounds", rounds);
  rec.Put("walks", 2 * rounds);
  rec.Put("ptes_changed", r.changed);
  rec.Put("timed_calls", calls * pages);
  rec.Put("flags_sum", r.flags_sum);
  rec.PutTiming(calls * pages, r.tsc, EmptyLoopTsc(calls * pages));
  rec.Finish(checks);
}

}  // namespace guest
