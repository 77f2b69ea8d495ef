#include "cli/bench_record.h"

#include <cmath>

#include "absl/strings/str_join.h"
#include "fmt/format.h"

namespace minivmm::cli {

using nlohmann::json;

const Stats* ConfigResult::Find(const std::string& metric) const {
  auto it = metrics.find(metric);
  return it == metrics.end() ? nullptr : &it->second;
}

json ConfigResultToJson(const ConfigResult& r) {
  json metrics = json::object();
  for (const MetricDef& def : MetricDefs(r.workload)) {
    const Stats* s = r.Find(def.name);
    if (s == nullptr) continue;
    json m = StatsToJson(*s);
    m["source"] = def.source;
    metrics[def.name] = m;
  }
  const WorkloadOps ops = OpsFor(r.workload);
  return {{"workload", r.workload},
          {"workload_spec", r.workload_spec},
          {"backend", r.backend},
          {"configuration", r.configuration},
          {"pvops", r.pvops},
          {"scope", r.scope},
          {"runs", r.runs},
          {"operation", ops.op_name},
          {"timing_operation", ops.time_op_name},
          {"metrics", metrics}};
}

ConfigResult ConfigResultFromJson(const json& j) {
  ConfigResult r;
  r.workload = j.value("workload", "");
  r.workload_spec = j.value("workload_spec", r.workload);
  r.backend = j.value("backend", "");
  r.configuration = j.value("configuration", "");
  r.pvops = j.value("pvops", "");
  r.scope = j.value("scope", "workload");
  r.runs = j.value("runs", 0);
  if (j.contains("metrics") && j["metrics"].is_object()) {
    for (const auto& [name, m] : j["metrics"].items()) {
      if (m.is_object()) r.metrics[name] = StatsFromJson(m);
    }
  }
  return r;
}

std::string IncompleteSummary(const nlohmann::json& record) {
  const auto it = record.find("incomplete");
  if (it == record.end() || !it->is_object()) return "";
  const nlohmann::json& i = *it;
  const auto count = [&](const char* key) {
    return i.contains(key) && i[key].is_number_unsigned() ? i[key].get<uint64_t>() : 0;
  };
  return fmt::format("{}; {} of {} runs done, {} missing",
                     i.contains("reason") && i["reason"].is_string()
                         ? i["reason"].get<std::string>()
                         : std::string("stopped early"),
                     count("completed_runs"), count("planned_runs"),
                     i.contains("missing") && i["missing"].is_array() ? i["missing"].size() : 0);
}

std::string ResultsCsv(const std::vector<ConfigResult>& results, uint32_t cpus) {
  std::string out =
      "workload,workload_spec,backend,configuration,pvops,scope,metric,source,runs,median,min,max,"
      "spread_pct,values,cpus\n";
  for (const ConfigResult& r : results) {
    for (const MetricDef& def : MetricDefs(r.workload)) {
      const Stats* s = r.Find(def.name);
      if (s == nullptr) continue;
      std::vector<std::string> values;
      for (double v : s->values) values.push_back(fmt::format("{}", v));
      // workload_spec and pvops contain commas: quoted.
      out += fmt::format("{},\"{}\",{},{},\"{}\",{},{},{},{},{},{},{},{:.3f},{},{}\n", r.workload,
                         r.workload_spec, r.backend, r.configuration, r.pvops, r.scope, def.name,
                         def.source, r.runs, s->median, s->min, s->max, s->spread_pct,
                         absl::StrJoin(values, ";"), cpus);
    }
  }
  return out;
}

namespace {

// Three significant digits: timings are not exact, so do not pretend.
std::string Approx(double v) {
  double a = std::fabs(v);
  if (a >= 1e9) return fmt::format("{:.3g}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:.3g}k", v / 1e3);
  return fmt::format("{:.3g}", v);
}

}  // namespace

std::string FormatStats(const Stats& s, MetricKind kind) {
  if (kind != MetricKind::kTime) return FormatValue(s.median);
  if (s.values.size() > 1) return fmt::format("{} ±{:.0f}%", Approx(s.median), s.spread_pct);
  return Approx(s.median);
}

bool WithinSpread(const Stats& before, const Stats& after) {
  const double pct = ChangePct(before.median, after.median);
  return !std::isnan(pct) && std::fabs(pct) <= std::max(before.spread_pct, after.spread_pct) &&
         before.median != after.median;
}

std::string FormatTimeChange(const Stats& before, const Stats& after) {
  std::string cell = FormatChange(before.median, after.median);
  // A change inside the runs' own spread is marked: it may be noise.
  if (WithinSpread(before, after)) cell += " ~";
  return cell;
}

std::string RenderBeforeAfter(const std::string& title, const std::string& before_name,
                              const std::string& after_name, const ConfigResult& before,
                              const ConfigResult& after) {
  std::vector<std::vector<std::string>> rows;
  for (const MetricDef& def : MetricDefs(after.workload)) {
    if (!def.in_table) continue;
    const Stats* b = before.Find(def.name);
    const Stats* a = after.Find(def.name);
    if (b == nullptr && a == nullptr) continue;
    // Causes that never happen in either run would only be noise.
    bool is_cause = def.name.rfind("exits.", 0) == 0 && def.name != "exits.total";
    if (is_cause && (b == nullptr || b->median == 0) && (a == nullptr || a->median == 0)) continue;
    std::string change;
    if (a && b) {
      change = def.kind == MetricKind::kTime ? FormatTimeChange(*b, *a)
                                             : FormatChange(b->median, a->median);
    }
    rows.push_back({def.label, def.source, b ? FormatStats(*b, def.kind) : "-",
                    a ? FormatStats(*a, def.kind) : "-", change});
  }
  return RenderTable(title, {"metric", "source", before_name, after_name, "change"}, rows);
}

std::string RenderConfigurations(const std::string& title,
                                 const std::vector<const ConfigResult*>& results) {
  if (results.empty()) return "";
  const ConfigResult& base = *results.front();
  const WorkloadOps ops = OpsFor(base.workload);
  auto median = [](const ConfigResult& r, const std::string& metric) {
    const Stats* s = r.Find(metric);
    return s ? s->median : std::nan("");
  };
  std::vector<std::vector<std::string>> rows;
  for (const ConfigResult* r : results) {
    const bool first = r == results.front();
    const Stats* tsc = r->Find("guest.tsc_per_op_net");
    auto change = [&](const std::string& metric) {
      const Stats* b = base.Find(metric);
      const Stats* a = r->Find(metric);
      if (first || a == nullptr || b == nullptr) return std::string();
      return metric == "guest.tsc_per_op_net" ? FormatTimeChange(*b, *a)
                                              : FormatChange(b->median, a->median);
    };
    rows.push_back(
        {r->configuration, FormatValue(median(*r, "exits.total")), change("exits.total"),
         FormatValue(median(*r, "wasted.total")), FormatValue(median(*r, "exits_per_op")),
         tsc ? FormatStats(*tsc, MetricKind::kTime) : "-", change("guest.tsc_per_op_net")});
  }
  return RenderTable(title,
                     {"configuration", "exits", "change", "wasted", "exits/" + ops.op_name,
                      "TSC/" + ops.time_op_name, "change"},
                     rows);
}

}  // namespace minivmm::cli
