#include "cli/exit_timeline.h"

#include <algorithm>

#include "cli/site_names.h"
#include "minivmm/exit_sites.h"

namespace minivmm::cli {

void ExitTimeline::Add(const ExitEvent& event) {
  if (event.site == nullptr) return;
  const int64_t at = std::max<int64_t>(event.exit_ns - start_ns_, 0);
  while (static_cast<uint64_t>(at / bin_ns_) >= kMaxBins) {
    bin_ns_ *= 2;
    for (std::vector<uint64_t>& row : counts_) {
      for (size_t i = 0; i < row.size(); ++i) {
        const uint64_t moved = row[i];
        row[i] = 0;
        row[i / 2] += moved;
      }
    }
    bins_ = (bins_ + 1) / 2;
  }
  const size_t bin = static_cast<size_t>(at / bin_ns_);
  std::vector<uint64_t>& row = counts_[static_cast<int>(event.site->cause)];
  if (row.size() <= bin) row.resize(bin + 1);
  ++row[bin];
  bins_ = std::max(bins_, bin + 1);
}

nlohmann::json ExitTimeline::Record() const {
  nlohmann::json by_cause = nlohmann::json::object();
  for (size_t c = 0; c < counts_.size(); ++c) {
    const std::vector<uint64_t>& row = counts_[c];
    if (std::all_of(row.begin(), row.end(), [](uint64_t n) { return n == 0; })) continue;
    std::vector<uint64_t> padded(row.begin(), row.end());
    padded.resize(bins_);
    by_cause[CauseKey(static_cast<Cause>(c))] = padded;
  }
  return {{"source", "host"},
          {"bin_ns", bin_ns_},
          {"bins", bins_},
          {"exits_by_cause", std::move(by_cause)}};
}

}  // namespace minivmm::cli
