// How hypercalls are counted (docs/design.md "What the VMM counts"), as pure
// functions over ExitStats so the rules are tested on their own.
//
// Rules:
// - hc_exits[nr]: direct calls (one exit each), whatever their result.
// - hc_ops[nr]: direct calls plus multicall entries, attributed to the entry's
//   own number; hc_errors[nr]: those of them that returned < 0.
// - Causes: `exits` counts direct calls of that kind whatever their result
//   (the exit was paid); `ops` counts operations carried out (result >= 0):
//   1 per call, except mmu_update (the number of requests done) and multicall
//   (its entry count). set_if(1) is IF set, set_if(0) IF clear, any other
//   argument has no cause (it is refused).
// - The multicall histogram counts accepted direct multicalls by entry count.
#ifndef MINIVMM_HYPERCALLS_ACCOUNTING_H_
#define MINIVMM_HYPERCALLS_ACCOUNTING_H_

#include <cstdint>
#include <optional>

#include "hypercalls/hypercall_env.h"
#include "vmm/core/exit_stats.h"

namespace minivmm {

struct CauseOps {
  Cause cause;
  uint64_t ops;  // operations carried out (0 when the call failed)
};

// The cause a hypercall `nr` with `args` and `result` is counted under, if
// any. Pure; defined for every input.
std::optional<CauseOps> CauseOf(uint64_t nr, const HypercallArgs& args, int64_t result);

// Histogram bucket for a multicall of `entries` entries: 0 for none, else
// bit_width(entries) capped at kMulticallHistogramBuckets - 1, i.e. buckets
// 0, 1, 2-3, 4-7, ..., 256-511, 512+.
int MulticallHistogramBucket(uint64_t entries);

// Counts one operation of registered hypercall `nr` (< MVMM_HC_MAX) that
// returned `result`; `direct` when it was its own exit rather than a
// multicall entry. No allocation, no lock.
void CountHypercall(ExitStats& stats, uint64_t nr, const HypercallArgs& args, int64_t result,
                    bool direct);

}  // namespace minivmm

#endif  // MINIVMM_HYPERCALLS_ACCOUNTING_H_
