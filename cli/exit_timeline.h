// The run record's `timeline` (docs/run-record.md): exits per cause in
// equal bins of host time since the run started, for `minivmm report`'s
// exits-over-time plot. Fed by an exit observer, so it is kept only when a
// record with sites is asked for; the loop without an observer reads no
// clock. At most kMaxBins bins: when the run outgrows them, the bin width
// doubles and neighbouring bins merge, so every exit stays counted.
#ifndef MINIVMM_CLI_EXIT_TIMELINE_H_
#define MINIVMM_CLI_EXIT_TIMELINE_H_

#include <array>
#include <cstdint>
#include <vector>

#include "minivmm/exit_event.h"
#include "minivmm/exit_stats.h"
#include "nlohmann/json.hpp"

namespace minivmm::cli {

class ExitTimeline {
 public:
  static constexpr size_t kMaxBins = 256;
  static constexpr int64_t kFirstBinNs = 1'000'000;

  // `start_ns`: ExitClockNs() when the run started (bin 0's start).
  explicit ExitTimeline(int64_t start_ns) : start_ns_(start_ns) {}

  // Counts one exit at its exit_ns under its site's cause; an event without
  // a site (a run that records none) is not counted.
  void Add(const ExitEvent& event);

  // {"source": "host", "bin_ns": W, "bins": N,
  //  "exits_by_cause": {"<cause>" | "none": [N counts]}}, causes with exits only.
  nlohmann::json Record() const;

 private:
  int64_t start_ns_;
  int64_t bin_ns_ = kFirstBinNs;
  size_t bins_ = 0;
  // Per cause, Cause::kCount for an exit of no cause.
  std::array<std::vector<uint64_t>, static_cast<int>(Cause::kCount) + 1> counts_{};
};

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_EXIT_TIMELINE_H_
