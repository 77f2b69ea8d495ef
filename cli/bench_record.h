// The bench record (schema "minivmm.bench", docs/run-record.md): the
// configurations a bench runs, the per-configuration results it keeps, and
// their renderings as tables and CSV. Shared by `bench` and `compare`.
#ifndef MINIVMM_CLI_BENCH_RECORD_H_
#define MINIVMM_CLI_BENCH_RECORD_H_

#include <map>
#include <string>
#include <vector>

#include "cli/bench_metrics.h"
#include "cli/experiment.h"
#include "nlohmann/json.hpp"

namespace minivmm::cli {

// 2: the embedded run records are of run schema version 2 (numeric reports).
inline constexpr int kBenchRecordSchemaVersion = 2;

// BenchConfiguration and BenchConfigurations() (the pvops settings bench
// runs) live in cli/experiment.h, shared with the Python module.

// The statistics of every metric over the repeated runs of one workload,
// backend and configuration.
struct ConfigResult {
  std::string workload;       // the workload's name, e.g. "ctx"
  std::string workload_spec;  // as given to the guest, e.g. "ctx,rounds=50"
  std::string backend;        // pv, native
  std::string configuration;  // a BenchConfiguration name
  std::string pvops;
  std::string scope;  // "workload" (boot subtracted) or "whole run"
  int runs = 0;
  std::map<std::string, Stats> metrics;

  const Stats* Find(const std::string& metric) const;
};

nlohmann::json ConfigResultToJson(const ConfigResult& r);
ConfigResult ConfigResultFromJson(const nlohmann::json& j);

// "stopped by SIGINT; 12 of 40 runs done, 28 missing" for a bench record
// that a signal or a failed run stopped early (its "incomplete" object),
// "" for a whole one and for a run record.
std::string IncompleteSummary(const nlohmann::json& record);

// One CSV row per result and metric, with a header line.
std::string ResultsCsv(const std::vector<ConfigResult>& results, uint32_t cpus);

// The headline table of one workload and backend: metric, source, before,
// after, change.
std::string RenderBeforeAfter(const std::string& title, const std::string& before_name,
                              const std::string& after_name, const ConfigResult& before,
                              const ConfigResult& after);

// One row per configuration of one workload and backend, each against the
// first (all naive): exits, change, exits per op, guest time per op, change.
std::string RenderConfigurations(const std::string& title,
                                 const std::vector<const ConfigResult*>& results);

// "3.83M ±2%" for timings (3 significant digits, spread when there are
// several runs), the exact median for counts.
std::string FormatStats(const Stats& s, MetricKind kind);
// True when the medians differ by no more than the larger of the two
// spreads (the change may be noise).
bool WithinSpread(const Stats& before, const Stats& after);
// FormatChange of the medians, with " ~" appended when WithinSpread.
std::string FormatTimeChange(const Stats& before, const Stats& after);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_BENCH_RECORD_H_
