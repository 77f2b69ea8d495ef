// The seed patches' own metrics from a bench: for each seed, its workload's
// guest time per operation in the seed's unit, before and after, against
// Xen's baseline (pvops=xen) and against all naive, with the published
// change beside it; and the exit-cost model, which says how much of each
// seed's saving the exits it removes explain (docs/RESULTS.md).
#ifndef MINIVMM_CLI_BENCH_SEEDS_H_
#define MINIVMM_CLI_BENCH_SEEDS_H_

#include <optional>
#include <string>
#include <vector>

#include "cli/bench_metrics.h"
#include "cli/bench_record.h"
#include "nlohmann/json.hpp"

namespace minivmm::cli {

struct SeedDef {
  std::string seed;       // "TLS shadow copies"
  std::string op;         // its pvops op: "tls"
  std::string workload;   // the bench workload spec it is measured on: "ctx,tls=same"
  std::string metric;     // the seed's benchmark: "lat_ctx"
  std::string unit;       // "us per switch"
  double ops_per_unit;    // the workload's timed operations per unit (a round trip is 2 passes)
  double per_ms;          // units of the unit's time per millisecond: 1000 for us, 1e6 for ns
  std::string published;  // "-9% (lmbench lat_ctx)"
};

// The five rows: TLS on lat_ctx and lat_pipe, the stts/clts pair, pte_flags,
// irq_restore.
const std::vector<SeedDef>& SeedDefs();

// The exit-cost model, from workload=exitcost: guest TSC per null
// hypercall, bare (one `out`, no wrapper: what an exit costs) and through
// the timed kernel's Hypercall() wrapper (the exit, the call and, in the
// counted kernel, its bookkeeping).
struct ExitCost {
  Stats bare_tsc;
  Stats wrapper_tsc;
};

// One seed, before and after, against one baseline.
struct SeedComparison {
  std::string baseline;  // "xen" or "naive"
  std::string before_config, after_config;
  Stats before, after;              // in the seed's unit
  bool within_spread = false;       // the change is inside the runs' spread
  double exits_saved_per_unit = 0;  // exits per unit, before - after
  // Exits saved x the bare exit's cost / time saved: only for a change
  // outside the spread that saved time (otherwise there is nothing to
  // explain); above 1 the exits saved cost more than the time saved.
  std::optional<double> exit_share;
  // Exits saved x what the kernel's Hypercall() wrapper adds to each
  // (wrapper - bare: the call, and the counting in the counted kernel) / time
  // saved, under the same conditions: the part of the saving that is the
  // guest's wrapper around the exits.
  std::optional<double> wrapper_share;
  // KVM's emulated instructions per unit (kvm_pvm), before and after; none
  // where the host does not count them.
  std::optional<double> insns_before, insns_after;
};

struct SeedResult {
  SeedDef def;
  std::vector<SeedComparison> comparisons;  // xen first, when run
};

// The seeds whose workload ran under pv. `exit_cost`: the exit-cost model
// (its bare cost turns exits into time); `tsc_khz`: the guest TSC rate (0:
// no time units, the seeds are left out).
std::vector<SeedResult> SeedResults(const std::vector<ConfigResult>& results,
                                    const ExitCost& exit_cost, uint64_t tsc_khz);

std::string RenderSeeds(const std::vector<SeedResult>& seeds, const ExitCost& exit_cost,
                        uint64_t tsc_khz, int repeat);
nlohmann::json SeedsToJson(const std::vector<SeedResult>& seeds);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_BENCH_SEEDS_H_
