// The metrics that `bench`, `compare` and `report` show, taken from run
// records (docs/run-record.md), and their statistics over repeated runs.
#ifndef MINIVMM_CLI_BENCH_METRICS_H_
#define MINIVMM_CLI_BENCH_METRICS_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"

namespace minivmm::cli {

// What one operation of a workload is, in the guest's own report keys.
struct WorkloadOps {
  std::string op_name;       // "pass": exits are counted per one of these
  std::string op_key;        // report key holding the count, e.g. "ctx.passes"
  std::string time_op_name;  // what <w>.tsc_net_per_op is per ("pass"; cpa: "pte_flags call")
};
// From the guest's workload list (guest/lib/workload_list.h): a workload
// with an op counter gets its own unit; any other counts "op"s as
// tsc_total / tsc_per_op (and has no operations if it reports no timing).
WorkloadOps OpsFor(std::string_view workload);
// `minivmm bench`'s default --workloads: the list's bench items, in order.
std::string DefaultBenchWorkloads();
// The workloads workload=all runs, in order.
std::vector<std::string> WorkloadsInAll();

// How a metric behaves in a comparison.
enum class MetricKind {
  kExits,  // exact VMM counts: any increase is a regression
  kTime,   // noisy timings: a regression only beyond a threshold
  kInfo,   // shown, never a regression (host-dependent or not "better" either way)
};

struct MetricDef {
  std::string name;    // stable key in JSON and CSV: "exits.total"
  std::string label;   // for tables: "exits"
  std::string source;  // vmm, guest, kvm-stats, host
  MetricKind kind;
  bool in_table;  // shown in the before/after table
};

// Every metric of a workload, in table order. `workload` names the unit in
// the labels ("exits per pass").
std::vector<MetricDef> MetricDefs(std::string_view workload);

// The metrics of `workload` in one run record. With `baseline` (a
// workload=none run with the same backend and pvops) the VMM counts are the
// run's minus the baseline's, i.e. the workload alone without boot and
// shutdown; without it they cover the whole run. The guest's `report`
// hypercalls are left out of exit counts in both cases. Metrics that the
// record lacks are absent from the map.
std::map<std::string, double> RunMetrics(const nlohmann::json& run, const nlohmann::json* baseline,
                                         std::string_view workload);

// The workload a run record ran (its config.workload report), or "".
std::string RecordWorkload(const nlohmann::json& run);

// Median, range and spread of repeated measurements.
struct Stats {
  std::vector<double> values;
  double median = 0, min = 0, max = 0;
  double spread_pct = 0;  // (max - min) / 2 / |median| * 100; 0 for one value
};
Stats Summarize(std::vector<double> values);
nlohmann::json StatsToJson(const Stats& s);
Stats StatsFromJson(const nlohmann::json& j);

// Change from `before` to `after` in percent; NaN when before is 0 (and
// after is not).
double ChangePct(double before, double after);
// "12", "4.25", "3.83M"; exact integers stay exact.
std::string FormatValue(double v);
// "-65.6%", "0", "+3.0%", "new" (from 0), "=" when equal.
std::string FormatChange(double before, double after);

// A plain-text table with a title line, a header and right-aligned columns
// (the first column left-aligned).
std::string RenderTable(const std::string& title, const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_BENCH_METRICS_H_
