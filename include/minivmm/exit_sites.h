// Where exits come from (docs/sites.md): each exit's guest code location and
// frame-pointer call chain, counted per (cause, stack) on the vCPU that took
// it. Recorded only when the run asks for it (VmConfig::record_sites). Part
// of the public API (docs/API.md).
#ifndef MINIVMM_EXIT_SITES_H_
#define MINIVMM_EXIT_SITES_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "minivmm/exit_stats.h"
#include "minivmm_abi/hypercall.h"

namespace minivmm {

// The deepest stack recorded: the exiting RIP and 31 return addresses.
inline constexpr int kMaxSiteFrames = 32;

// One exit's kind and stack.
struct ExitSite {
  ExitReason reason = ExitReason::kUnknown;
  // The cause whose `exits` the exit counted in (ExitStats::causes);
  // Cause::kCount for an exit of no cause (a console write, HLT, MMIO, ...).
  Cause cause = Cause::kCount;
  // The hypercall number (EAX) for a hypercall exit; -1 for any other exit.
  int64_t hypercall = -1;
  // Taken at CPL 3: `frames` is the RIP alone (no walk of a ring-3 stack).
  bool user = false;
  uint8_t depth = 0;  // frames used, 1 to kMaxSiteFrames
  // frames[0]: the guest RIP at the exit; frames[i > 0]: the return address
  // of frame i (guest virtual addresses). Past `depth`: zero.
  std::array<uint64_t, kMaxSiteFrames> frames{};

  std::span<const uint64_t> stack() const { return std::span(frames).first(depth); }

  // Past `depth` both are zero: the frames used decide. The RIP first
  // (sites differ there most), and no memcmp call for the RIP alone: the
  // site recorder compares each exit's site with the last one's.
  friend bool operator==(const ExitSite& a, const ExitSite& b) {
    if (a.frames[0] != b.frames[0] || a.hypercall != b.hypercall || a.depth != b.depth ||
        a.reason != b.reason || a.cause != b.cause || a.user != b.user)
      return false;
    return a.depth <= 1 ||
           std::equal(a.frames.begin() + 1, a.frames.begin() + a.depth, b.frames.begin() + 1);
  }
  template <typename H>
  friend H AbslHashValue(H h, const ExitSite& s) {
    h = H::combine(std::move(h), s.reason, s.cause, s.hypercall, s.user, s.depth);
    return H::combine_contiguous(std::move(h), s.frames.data(), s.depth);
  }
};

struct SiteCount {
  uint64_t exits = 0;
  // Of those, wasted (docs/wasted-exits.md), by verdict; all zero without
  // the analysis (VmConfig::analyse_waste).
  std::array<uint64_t, static_cast<int>(WasteReason::kCount)> wasted{};
  // Of those, exits that a batch could have carried (docs/sites.md): a
  // direct call of the kind a lazy mode queues (IsLazyModeCall; not the #NM
  // handler's clts, which the guest tags MVMM_TS_CLEAR_FOR_NM) that came
  // right after another such exit on its vCPU, with no interrupt injected
  // between. One multicall would have made the run one exit.
  uint64_t batchable = 0;

  uint64_t wasted_exits() const {
    uint64_t sum = 0;
    for (uint64_t w : wasted) sum += w;
    return sum;
  }
};

// The hypercalls a guest's lazy CPU and MMU modes queue into one multicall,
// as Xen's (arch/x86/xen/multicalls.c: the descriptor, stack, FPU and
// segment-base updates of a context switch; page-table updates and CR3
// loads): the calls SiteCount::batchable counts.
constexpr bool IsLazyModeCall(int64_t nr) {
  switch (nr) {
    case MVMM_HC_update_descriptor:
    case MVMM_HC_stack_switch:
    case MVMM_HC_fpu_taskswitch:
    case MVMM_HC_set_segment_base:
    case MVMM_HC_mmu_update:
    case MVMM_HC_mmuext_op:
      return true;
    default:
      return false;
  }
}

// One vCPU's sites. Every exit the vCPU took is counted at exactly one site,
// so for each cause the sites' exits sum to ExitStats::causes[cause].exits
// and their wasted exits to ExitStats::wasted_by_cause[cause].exits, save
// `wasted_unplaced` (below).
struct ExitSites {
  absl::flat_hash_map<ExitSite, SiteCount> counts;
  // Wasted exits whose verdict came so many exits after them that their
  // site was no longer known (a cancelled pair's first half, more than
  // kSiteHistory (1024) candidate exits back; docs/sites.md): counted in
  // ExitStats::wasted_* but at no site.
  uint64_t wasted_unplaced = 0;

  void Add(const ExitSites& other);
};

}  // namespace minivmm

#endif  // MINIVMM_EXIT_SITES_H_
