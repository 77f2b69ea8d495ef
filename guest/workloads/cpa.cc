// workload=cpa (change_page_attr): walk R pages of 4 KiB PTEs reading
// pte_flags() (the pte_flags variant), set NX on each with set_pte, flush
// the TLB, verify, then clear NX the same way. Each walk runs in lazy MMU
// mode, so with batch=on under pv its R mmu_updates go out as one
// multicall (per MulticallBatch::kCapacity entries).
// A separate timing loop measures pte_flags() alone (calls x R per round).
#include "arch/cpu.h"
#include "kernel/mem.h"
#include "kernel/panic.h"
#include "kernel/syscall.h"
#include "kernel/syscall_abi.h"
#include "pv/pv_ops.h"
#include "workloads/workload.h"

namespace guest {
namespace {

// pte_flags() as Linux spells it: pte_val() (a pv op) masked inline.
// naive and patched share the recorded call site; optimized is pte_attrs.
template <Variant V>
uint64_t PteFlags(uint64_t pte) {
  ++g_kc.pte_flags_calls;
  if constexpr (V == Variant::kOptimized) {
    return pte & kPteFlagsMask;
  } else {
    return PvPteVal(pte) & kPteFlagsMask;
  }
}

template <Variant V>
uint64_t Walk(const Arena& arena, uint64_t pages, bool set_nx) {
  uint64_t changed = 0;
  pv_ops.enter_lazy_mmu();
  for (uint64_t p = 0; p < pages; ++p) {
    uint64_t* ptep = LookupPte(arena.start + p * kPageSize);
    GUEST_ASSERT(ptep != nullptr);
    uint64_t pte = *ptep;
    bool has_nx = (PteFlags<V>(pte) & kPteNx) != 0;
    if (has_nx != set_nx) {
      SetPte(ptep, set_nx ? (pte | kPteNx) : (pte & ~kPteNx));
      ++changed;
    }
  }
  pv_ops.leave_lazy_mmu();
  pv_ops.flush_tlb();
  return changed;
}

template <Variant V>
uint64_t TimePteFlags(const Arena& arena, uint64_t pages, uint64_t calls, uint64_t* sink) {
  uint64_t acc = 0;
  uint64_t t0 = cpu::Rdtsc();
  for (uint64_t c = 0; c < calls; ++c) {
    for (uint64_t p = 0; p < pages; ++p)
      acc += PteFlags<V>(*LookupPte(arena.start + p * kPageSize));
  }
  *sink = acc;
  return cpu::Rdtsc() - t0;
}

struct CpaResult {
  uint64_t changed;
  uint64_t tsc;
};

template <Variant V>
CpaResult Run(const Arena& arena, uint64_t pages, uint64_t rounds, uint64_t calls,
              uint64_t* checks) {
  CpaResult r = {0, 0};
  for (uint64_t i = 0; i < rounds; ++i) {
    r.changed += Walk<V>(arena, pages, true);
    for (uint64_t p = 0; p < pages; ++p) {
      if (!(*LookupPte(arena.start + p * kPageSize) & kPteNx))
        Panic("cpa: NX not set after the walk");
    }
    r.changed += Walk<V>(arena, pages, false);
    for (uint64_t p = 0; p < pages; ++p) {
      if (*LookupPte(arena.start + p * kPageSize) & kPteNx)
        Panic("cpa: NX still set after the walk");
    }
    *checks += 2;
  }
  uint64_t sink;
  r.tsc = TimePteFlags<V>(arena, pages, calls, &sink);
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
  CpaResult r;
  switch (PvVariant(PvOp::kPteFlags)) {
    case Variant::kOptimized:
      r = Run<Variant::kOptimized>(arena, pages, rounds, calls, &checks);
      break;
    default:  // naive, and patched (the same call sites, rewritten at boot)
      r = Run<Variant::kNaive>(arena, pages, rounds, calls, &checks);
      break;
  }
  rec.Put("pages", pages);
  rec.Put("rounds", rounds);
  rec.Put("walks", 2 * rounds);
  rec.Put("ptes_changed", r.changed);
  rec.Put("timed_calls", calls * pages);
  rec.PutTiming(calls * pages, r.tsc, EmptyLoopTsc(calls * pages));
  rec.Finish(checks);
}

}  // namespace guest
