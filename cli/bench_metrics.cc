#include "cli/bench_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "cli/report_value.h"
#include "fmt/format.h"
#include "lib/cmdline.h"
#include "minivmm/exit_stats.h"

namespace minivmm::cli {
namespace {

using nlohmann::json;

// The causes of docs/design.md "What the VMM counts", in table order
// (MINIVMM_CAUSE_LIST).
const std::vector<std::string_view>& Causes() {
  static const std::vector<std::string_view> kCauses = [] {
    std::vector<std::string_view> v;
    for (int c = 0; c < static_cast<int>(Cause::kCount); ++c)
      v.push_back(CauseName(static_cast<Cause>(c)));
    return v;
  }();
  return kCauses;
}

std::string CauseLabel(std::string_view cause) {
  for (int c = 0; c < static_cast<int>(Cause::kCount); ++c)
    if (CauseName(static_cast<Cause>(c)) == cause)
      return std::string(minivmm::CauseLabel(static_cast<Cause>(c)));
  return std::string(cause);
}

// A number at `path` (objects only) or `fallback`.
double Num(const json& j, std::initializer_list<std::string_view> path, double fallback = 0) {
  const json* at = &j;
  for (std::string_view key : path) {
    if (!at->is_object()) return fallback;
    auto it = at->find(std::string(key));
    if (it == at->end()) return fallback;
    at = &*it;
  }
  return at->is_number() ? at->get<double>() : fallback;
}

// The guest's reports of a run record, or null.
const json* Reports(const json& run) {
  auto guest = run.find("guest");
  if (guest == run.end() || !guest->is_object()) return nullptr;
  auto reports = guest->find("reports");
  return reports != guest->end() && reports->is_object() ? &*reports : nullptr;
}

// A numeric guest report value, if present: a JSON number, or in a record
// of run schema version 1 a string of digits.
bool Report(const json& run, const std::string& key, double* out) {
  const json* reports = Reports(run);
  if (reports == nullptr) return false;
  auto it = reports->find(key);
  if (it == reports->end()) return false;
  std::optional<double> v = ReportNumber(*it);
  if (!v) return false;
  *out = *v;
  return true;
}

// Exit counts of one record that the workload metrics are built from.
std::map<std::string, double> ExitCounts(const json& run) {
  std::map<std::string, double> c;
  double report_exits = Num(run, {"hypercalls", "calls", "report", "exits"});
  c["exits.total"] = Num(run, {"exits", "total"}) - report_exits;
  double causes = 0;
  for (std::string_view cause : Causes()) {
    double exits = Num(run, {"causes", "causes", cause, "exits"});
    causes += exits;
    c["exits." + std::string(cause)] = exits;
    c["ops." + std::string(cause)] = Num(run, {"causes", "causes", cause, "ops"});
  }
  c["exits.other"] = c["exits.total"] - causes;
  // The wasted-exit analysis (docs/wasted-exits.md), when the run had it.
  if (run.contains("wasted") && run["wasted"].is_object()) {
    double wasted = 0;
    for (std::string_view cause : Causes()) {
      double exits = Num(run, {"wasted", "by_cause", cause, "exits"});
      wasted += exits;
      c["wasted." + std::string(cause)] = exits;
    }
    c["wasted.total"] = wasted;
  }
  c["kvm.insn_emulation"] = Num(run, {"host_counters", "deltas", "insn_emulation"}, -1);
  return c;
}

}  // namespace

WorkloadOps OpsFor(std::string_view w) {
  const guest::WorkloadSpec* spec = guest::FindWorkload(guest::StrView(w.data(), w.size()));
  if (spec == nullptr) return {"op", "", "op"};
  const std::string counter = spec->op_counter;
  return {spec->op, counter.empty() ? "" : std::string(w) + "." + counter, spec->time_op};
}

std::string DefaultBenchWorkloads() {
  std::string items;
  for (const guest::WorkloadSpec* w = guest::WorkloadTable(); w->name != nullptr; ++w) {
    if (*w->bench == '\0') continue;
    if (!items.empty()) items += ",";
    items += w->bench;
  }
  return items;
}

std::vector<std::string> WorkloadsInAll() {
  std::vector<std::string> names;
  for (const guest::WorkloadSpec* w = guest::WorkloadTable(); w->name != nullptr; ++w)
    if ((w->flags & guest::kWorkloadInAll) != 0) names.push_back(w->name);
  return names;
}

std::vector<MetricDef> MetricDefs(std::string_view workload) {
  const WorkloadOps ops = OpsFor(workload);
  std::vector<MetricDef> defs;
  defs.push_back({"exits.total", "exits", "vmm", MetricKind::kExits, true});
  for (std::string_view cause : Causes()) {
    defs.push_back({"exits." + std::string(cause), "  exits: " + CauseLabel(cause), "vmm",
                    MetricKind::kExits, true});
  }
  defs.push_back({"exits.other", "  exits: other (of no cause)", "vmm", MetricKind::kExits, true});
  defs.push_back({"exits_per_op", "exits per " + ops.op_name, "vmm", MetricKind::kExits, true});
  defs.push_back(
      {"wasted.total", "wasted exits (changed nothing)", "vmm", MetricKind::kExits, true});
  for (std::string_view cause : Causes()) {
    defs.push_back({"wasted." + std::string(cause), "  wasted: " + CauseLabel(cause), "vmm",
                    MetricKind::kExits, false});
  }
  defs.push_back({"guest.tsc_per_op_net", "guest TSC per " + ops.time_op_name + ", net", "guest",
                  MetricKind::kTime, true});
  defs.push_back({"kvm.insn_emulation_per_op", "emulated instructions per " + ops.op_name,
                  "kvm-stats", MetricKind::kInfo, true});
  defs.push_back({"host.run_ms", "run wall time, ms (whole run)", "host", MetricKind::kInfo, true});
  for (std::string_view cause : Causes()) {
    defs.push_back({"ops." + std::string(cause), "operations: " + CauseLabel(cause), "vmm",
                    MetricKind::kInfo, false});
  }
  defs.push_back({"ops", ops.op_name + "s", "guest", MetricKind::kInfo, false});
  defs.push_back(
      {"guest.tsc_per_op", "guest TSC per " + ops.time_op_name, "guest", MetricKind::kTime, false});
  defs.push_back({"guest.hc_exits", "hypercall exits counted by the guest", "guest",
                  MetricKind::kInfo, false});
  defs.push_back(
      {"kvm.insn_emulation", "emulated instructions", "kvm-stats", MetricKind::kInfo, false});
  return defs;
}

std::string RecordWorkload(const json& run) {
  const json* reports = Reports(run);
  if (reports == nullptr || !reports->contains("config.workload")) return "";
  return ReportText((*reports)["config.workload"]);
}

std::map<std::string, double> RunMetrics(const json& run, const json* baseline,
                                         std::string_view workload) {
  std::map<std::string, double> m = ExitCounts(run);
  if (baseline != nullptr) {
    for (const auto& [key, value] : ExitCounts(*baseline)) m[key] -= value;
  }
  if (m["kvm.insn_emulation"] < 0) m.erase("kvm.insn_emulation");

  const std::string w(workload);
  const WorkloadOps ops = OpsFor(workload);
  double count = 0, tsc_total = 0, tsc_per_op = 0;
  bool have_ops = !ops.op_key.empty() && Report(run, ops.op_key, &count);
  if (!have_ops && Report(run, w + ".tsc_total", &tsc_total) &&
      Report(run, w + ".tsc_per_op", &tsc_per_op) && tsc_per_op > 0) {
    count = std::round(tsc_total / tsc_per_op);
    have_ops = true;
  }
  if (have_ops && count > 0) {
    m["ops"] = count;
    m["exits_per_op"] = m["exits.total"] / count;
    if (m.count("kvm.insn_emulation"))
      m["kvm.insn_emulation_per_op"] = m["kvm.insn_emulation"] / count;
  }
  double v;
  if (Report(run, w + ".tsc_net_per_op", &v)) m["guest.tsc_per_op_net"] = v;
  if (Report(run, w + ".tsc_per_op", &v)) m["guest.tsc_per_op"] = v;
  if (Report(run, w + ".hc_exits", &v)) m["guest.hc_exits"] = v;
  m["host.run_ms"] = Num(run, {"result", "elapsed_ns"}) / 1e6;
  return m;
}

Stats Summarize(std::vector<double> values) {
  Stats s;
  s.values = values;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  s.median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  s.min = values.front();
  s.max = values.back();
  s.spread_pct = s.median != 0 ? (s.max - s.min) / 2 / std::fabs(s.median) * 100 : 0;
  return s;
}

json StatsToJson(const Stats& s) {
  return {{"values", s.values},
          {"median", s.median},
          {"min", s.min},
          {"max", s.max},
          {"spread_pct", s.spread_pct}};
}

Stats StatsFromJson(const json& j) {
  if (j.contains("values") && j["values"].is_array() && !j["values"].empty()) {
    return Summarize(j["values"].get<std::vector<double>>());
  }
  Stats s;
  s.median = j.value("median", 0.0);
  s.min = j.value("min", s.median);
  s.max = j.value("max", s.median);
  s.spread_pct = j.value("spread_pct", 0.0);
  return s;
}

double ChangePct(double before, double after) {
  if (before == after) return 0;
  if (before == 0) return std::nan("");
  return (after - before) / std::fabs(before) * 100;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "-";
  double a = std::fabs(v);
  bool integer = v == std::round(v);
  // Counts stay exact up to 10 million; other large values get 3 digits.
  if (integer && a < 1e7) return fmt::format("{:.0f}", v);
  if (a >= 1e9) return fmt::format("{:.3g}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:.3g}k", v / 1e3);
  if (a >= 100) return fmt::format("{:.0f}", v);
  return fmt::format("{:.2f}", v);
}

std::string FormatChange(double before, double after) {
  if (before == after) return "=";
  double pct = ChangePct(before, after);
  if (std::isnan(pct)) return "new";
  if (std::fabs(pct) < 0.05) return pct < 0 ? "-0.0%" : "+0.0%";
  return fmt::format("{:+.1f}%", pct);
}

std::string RenderTable(const std::string& title, const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  };
  measure(header);
  for (const auto& row : rows) measure(row);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out = " ";
    for (size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      out +=
          i == 0 ? fmt::format(" {:<{}}", cell, width[i]) : fmt::format("  {:>{}}", cell, width[i]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = title + "\n" + line(header);
  for (const auto& row : rows) out += line(row);
  return out;
}

}  // namespace minivmm::cli
