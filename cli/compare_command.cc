// minivmm compare A.json B.json: the bench tables between two run records or
// two bench records of the same vCPU count, metric by metric. Exit status as
// diff(1) with --fail-on-regression: 0 same or better, 1 a regression, 2
// trouble (cli/exit_codes.h).
#include <cmath>
#include <set>

#include "CLI/CLI.hpp"
#include "cli/bench_metrics.h"
#include "cli/bench_record.h"
#include "cli/commands.h"
#include "cli/run_record.h"
#include "fmt/format.h"

namespace minivmm::cli {
namespace {

using nlohmann::json;

bool Load(const std::string& path, json* out, std::string* schema) {
  std::string error;
  if (ReadRecord(path, out, schema, &error)) return true;
  fmt::print(stderr, "minivmm compare: {}\n", error);
  return false;
}

// The vCPUs of every run of a record: a run record's config.cpus, a bench
// record's settings.cpus; 1 in records made before --cpus existed.
uint64_t RecordCpus(const json& record, const std::string& schema) {
  const json& where = record.value(schema == "minivmm.run" ? "config" : "settings", json::object());
  const json cpus = where.is_object() ? where.value("cpus", json(1)) : json(1);
  return cpus.is_number_unsigned() ? cpus.get<uint64_t>() : 0;
}

std::string Vcpus(uint64_t n) { return fmt::format("{} vCPU{}", n, n == 1 ? "" : "s"); }

class Comparison {
 public:
  explicit Comparison(const CompareOptions& o) : o_(o) {}

  // Judges one metric; returns its change cell, marked when it regressed.
  std::string Judge(const std::string& where, const MetricDef& def, const Stats& a,
                    const Stats& b) {
    std::string cell = FormatChange(a.median, b.median);
    double pct = ChangePct(a.median, b.median);
    bool worse = false, better = false;
    if (def.kind == MetricKind::kExits) {
      worse = b.median > a.median;
      better = b.median < a.median;
    } else if (def.kind == MetricKind::kTime && o_.time_threshold_pct > 0 && !std::isnan(pct)) {
      worse = pct > o_.time_threshold_pct;
      better = pct < -o_.time_threshold_pct;
    }
    if (def.kind == MetricKind::kInfo) return cell;
    ++compared_;
    if (worse) {
      regressions_.push_back(fmt::format("{}: {} {} -> {} ({})", where,
                                         def.label.substr(def.label.find_first_not_of(' ')),
                                         FormatValue(a.median), FormatValue(b.median), cell));
      return cell + " !";
    }
    if (better) ++better_;
    return cell;
  }

  std::string Table(const std::string& title, const std::string& where, const ConfigResult& a,
                    const ConfigResult& b) {
    std::vector<std::vector<std::string>> rows;
    for (const MetricDef& def : MetricDefs(a.workload)) {
      const Stats* sa = a.Find(def.name);
      const Stats* sb = b.Find(def.name);
      if (sa == nullptr || sb == nullptr) continue;
      std::string change = Judge(where, def, *sa, *sb);
      if (!def.in_table) continue;
      bool is_cause = def.name.rfind("exits.", 0) == 0 && def.name != "exits.total";
      if (is_cause && sa->median == 0 && sb->median == 0) continue;
      rows.push_back(
          {def.label, def.source, FormatStats(*sa, def.kind), FormatStats(*sb, def.kind), change});
    }
    return RenderTable(title, {"metric", "source", "A", "B", "change"}, rows);
  }

  int Finish() const {
    fmt::print("{} metrics compared: {} better, {} worse, {} the same{}\n", compared_, better_,
               regressions_.size(), compared_ - better_ - regressions_.size(),
               o_.time_threshold_pct > 0
                   ? fmt::format(" (timings count beyond ±{}%)", o_.time_threshold_pct)
                   : " (timings shown, not judged: see --time-threshold)");
    for (const std::string& r : regressions_) fmt::print("regression: {}\n", r);
    return o_.fail_on_regression && !regressions_.empty() ? kCompareRegression : 0;
  }

 private:
  const CompareOptions& o_;
  size_t compared_ = 0, better_ = 0;
  std::vector<std::string> regressions_;
};

// A run record as a one-run result of its own workload (whole-run exits).
ConfigResult FromRun(const json& run, const std::string& workload) {
  ConfigResult r;
  r.workload = workload;
  r.workload_spec = workload;
  r.scope = "whole run";
  r.runs = 1;
  for (const auto& [name, v] : RunMetrics(run, nullptr, workload)) r.metrics[name] = Summarize({v});
  if (workload == "all") {
    // Whole-run exits divided by one sub-workload's operations mean nothing.
    r.metrics.erase("exits_per_op");
    r.metrics.erase("kvm.insn_emulation_per_op");
  }
  return r;
}

int CompareRuns(Comparison& c, const json& a, const json& b) {
  std::string wa = RecordWorkload(a), wb = RecordWorkload(b);
  auto cmdline = [](const json& r) {
    return r.contains("config") && r["config"].is_object() ? r["config"].value("cmdline", "") : "";
  };
  fmt::print("A: {}\nB: {}\n\n", cmdline(a), cmdline(b));
  if (wa != wb)
    fmt::print("note: different workloads ({} and {}); per-operation rows use A's\n", wa, wb);
  fmt::print("{}\n", c.Table(fmt::format("{}: A -> B (one run each, whole run)", wa), wa,
                             FromRun(a, wa), FromRun(b, wa)));
  if (wa == "all") {
    for (const std::string& sub : WorkloadsInAll()) {
      ConfigResult ra = FromRun(a, sub), rb = FromRun(b, sub);
      for (ConfigResult* r : {&ra, &rb}) {
        std::erase_if(r->metrics, [](const auto& m) { return m.first.rfind("guest.", 0) != 0; });
      }
      if (ra.metrics.empty()) continue;
      fmt::print("{}\n", c.Table(fmt::format("{} within workload=all", sub), sub, ra, rb));
    }
  }
  return c.Finish();
}

int CompareBenches(Comparison& c, const json& a, const json& b) {
  auto results = [](const json& bench) {
    std::vector<ConfigResult> out;
    for (const json& r : bench.value("results", json::array()))
      out.push_back(ConfigResultFromJson(r));
    return out;
  };
  std::vector<ConfigResult> ra = results(a), rb = results(b);
  auto key = [](const ConfigResult& r) {
    return r.workload_spec + " " + r.backend + " " + r.configuration;
  };
  std::map<std::string, const ConfigResult*> by_key;
  for (const ConfigResult& r : rb) by_key[key(r)] = &r;
  // One table per workload and backend: each configuration, A against B.
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::vector<std::string>>> rows;
  size_t matched = 0;
  for (const ConfigResult& r : ra) {
    auto it = by_key.find(key(r));
    if (it == by_key.end()) continue;
    ++matched;
    const ConfigResult& s = *it->second;
    std::string group =
        fmt::format("{} (workload={}), backend={}", r.workload, r.workload_spec, r.backend);
    if (!rows.count(group)) groups.push_back(group);
    std::string where = group + ", " + r.configuration;
    // Exits, wasted exits (absent from records made without the analysis)
    // and guest time: A, B and the change of each.
    std::map<std::string, std::vector<std::string>> cells;
    for (const MetricDef& def : MetricDefs(r.workload)) {
      const Stats* x = r.Find(def.name);
      const Stats* y = s.Find(def.name);
      if (x == nullptr || y == nullptr) continue;
      std::string change = c.Judge(where, def, *x, *y);
      if (def.name == "exits.total" || def.name == "wasted.total") {
        cells[def.name] = {FormatValue(x->median), FormatValue(y->median), change};
      } else if (def.name == "guest.tsc_per_op_net") {
        cells[def.name] = {FormatStats(*x, def.kind), FormatStats(*y, def.kind), change};
      }
    }
    std::vector<std::string> row = {r.configuration};
    for (const char* metric : {"exits.total", "wasted.total", "guest.tsc_per_op_net"}) {
      auto it = cells.find(metric);
      const std::vector<std::string> none = {"-", "-", ""};
      const std::vector<std::string>& v = it != cells.end() ? it->second : none;
      row.insert(row.end(), v.begin(), v.end());
    }
    rows[group].push_back(row);
  }
  if (matched == 0) {
    fmt::print(stderr,
               "minivmm compare: the two benches share no workload, backend and configuration\n");
    return kCompareTrouble;
  }
  for (const std::string& g : groups) {
    fmt::print("{}\n", RenderTable(g + ": A -> B (medians)",
                                   {"optimized", "exits A", "exits B", "change", "wasted A",
                                    "wasted B", "change", "TSC/op A", "TSC/op B", "change"},
                                   rows[g]));
  }
  if (matched < ra.size() || matched < rb.size()) {
    fmt::print("note: {} results only in A, {} only in B (not compared)\n", ra.size() - matched,
               rb.size() - matched);
  }
  return c.Finish();
}

}  // namespace

void AddCompareFlags(CLI::App& app, CompareOptions& o) {
  app.add_option("A", o.a_path, "The earlier run or bench record (JSON)")->required();
  app.add_option("B", o.b_path, "The later one, of the same kind")->required();
  app.add_flag("--fail-on-regression", o.fail_on_regression,
               "Exit 1 if any exit count grew (or a timing, with --time-threshold)");
  app.add_option("--time-threshold", o.time_threshold_pct,
                 "Count a guest timing as a regression beyond this many percent (0 = never)")
      ->check(CLI::Range(0.0, 1e6));
}

int CompareCommand(const CompareOptions& o) {
  json a, b;
  std::string schema_a, schema_b;
  if (!Load(o.a_path, &a, &schema_a) || !Load(o.b_path, &b, &schema_b)) return kCompareTrouble;
  if (schema_a != schema_b) {
    fmt::print(stderr, "minivmm compare: cannot compare a {} record with a {} record\n", schema_a,
               schema_b);
    return kCompareTrouble;
  }
  // A secondary CPU's bring-up and idle exits count in a run's totals: the
  // counts of different vCPU counts differ by design, not by a change.
  const uint64_t cpus_a = RecordCpus(a, schema_a), cpus_b = RecordCpus(b, schema_b);
  if (cpus_a != cpus_b) {
    fmt::print(stderr,
               "minivmm compare: A ran with {} and B with {}: records of different vCPU counts "
               "are not compared (rerun one with --cpus {})\n",
               Vcpus(cpus_a), Vcpus(cpus_b), cpus_a);
    return kCompareTrouble;
  }
  fmt::print("{} in every run of A and B\n", Vcpus(cpus_a));
  // A bench stopped early compares on what it measured; said first.
  for (const auto& [name, record] : {std::pair{"A", &a}, std::pair{"B", &b}}) {
    if (std::string note = IncompleteSummary(*record); !note.empty())
      fmt::print("{} is incomplete: {}\n", name, note);
  }
  Comparison c(o);
  return schema_a == "minivmm.run" ? CompareRuns(c, a, b) : CompareBenches(c, a, b);
}

}  // namespace minivmm::cli
