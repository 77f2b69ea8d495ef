#include "hypercalls/accounting.h"

#include <algorithm>
#include <bit>

namespace minivmm {

std::optional<CauseOps> CauseOf(uint64_t nr, const HypercallArgs& args, int64_t result) {
  const uint64_t done = result >= 0 ? 1 : 0;
  switch (nr) {
    case MVMM_HC_set_if:
      if (args[0] == 1) return CauseOps{Cause::kIfSet, done};
      if (args[0] == 0) return CauseOps{Cause::kIfClear, done};
      return std::nullopt;
    case MVMM_HC_fpu_taskswitch:
    case MVMM_HC_write_cr0:
      return CauseOps{Cause::kCr0Write, done};
    case MVMM_HC_update_descriptor:
      return CauseOps{Cause::kDescriptorUpdate, done};
    case MVMM_HC_mmu_update:
      return CauseOps{Cause::kPageTableUpdate, result >= 0 ? static_cast<uint64_t>(result) : 0};
    case MVMM_HC_multicall:
      return CauseOps{Cause::kMulticall, result >= 0 ? args[1] : 0};
    default:
      return std::nullopt;
  }
}

int MulticallHistogramBucket(uint64_t entries) {
  return std::min<int>(std::bit_width(entries), kMulticallHistogramBuckets - 1);
}

void CountHypercall(ExitStats& stats, uint64_t nr, const HypercallArgs& args, int64_t result,
                    bool direct) {
  ++stats.hc_ops[nr];
  if (direct) ++stats.hc_exits[nr];
  if (result < 0) ++stats.hc_errors[nr];
  if (const std::optional<CauseOps> cause = CauseOf(nr, args, result)) {
    stats.CountCause(cause->cause, cause->ops, direct ? 1 : 0);
  }
  if (direct && nr == MVMM_HC_multicall && result >= 0) {
    ++stats.multicall_entries_histogram[MulticallHistogramBucket(args[1])];
  }
}

}  // namespace minivmm
