#include "cli/bench_seeds.h"

#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "lib/cmdline.h"

namespace minivmm::cli {
namespace {

using nlohmann::json;

const ConfigResult* Find(const std::vector<ConfigResult>& results, const std::string& workload,
                         const std::string& configuration) {
  // The seed's workload, or the same with more parameters ("irq,loops=4").
  for (const ConfigResult& r : results)
    if ((r.workload_spec == workload || r.workload_spec.rfind(workload + ",", 0) == 0) &&
        r.backend == "pv" && r.configuration == configuration)
      return &r;
  return nullptr;
}

// The statistics of `metric` scaled by `factor` (median, range, spread).
Stats Scaled(const Stats& s, double factor) {
  std::vector<double> v = s.values;
  for (double& x : v) x *= factor;
  if (!v.empty()) return Summarize(std::move(v));
  Stats out = s;
  out.median *= factor;
  out.min *= factor;
  out.max *= factor;
  return out;
}

std::optional<double> PerUnit(const ConfigResult& r, const std::string& metric, double factor) {
  const Stats* s = r.Find(metric);
  if (s == nullptr) return std::nullopt;
  return s->median * factor;
}

std::optional<SeedComparison> Compare(const SeedDef& def, const std::string& baseline,
                                      const ConfigResult* before, const ConfigResult* after,
                                      const ExitCost& exit_cost, uint64_t tsc_khz) {
  if (before == nullptr || after == nullptr) return std::nullopt;
  const Stats* tb = before->Find("guest.tsc_per_op_net");
  const Stats* ta = after->Find("guest.tsc_per_op_net");
  if (tb == nullptr || ta == nullptr) return std::nullopt;
  // TSC per operation -> the seed's unit.
  const double factor = def.ops_per_unit * def.per_ms / static_cast<double>(tsc_khz);
  SeedComparison c;
  c.baseline = baseline;
  c.before_config = before->configuration;
  c.after_config = after->configuration;
  c.before = Scaled(*tb, factor);
  c.after = Scaled(*ta, factor);
  c.within_spread = WithinSpread(c.before, c.after);
  // Exits and emulated instructions per timed operation: only where the
  // workload counts them per the operation it times (cpa times pte_flags
  // calls apart from the walks whose PTEs it counts).
  const WorkloadOps ops = OpsFor(before->workload);
  if (ops.op_name == ops.time_op_name) {
    c.insns_before = PerUnit(*before, "kvm.insn_emulation_per_op", def.ops_per_unit);
    c.insns_after = PerUnit(*after, "kvm.insn_emulation_per_op", def.ops_per_unit);
  }
  const Stats* eb = before->Find("exits_per_op");
  const Stats* ea = after->Find("exits_per_op");
  if (ops.op_name == ops.time_op_name && eb != nullptr && ea != nullptr) {
    c.exits_saved_per_unit = (eb->median - ea->median) * def.ops_per_unit;
    const double saved = c.before.median - c.after.median;
    const double modelled = c.exits_saved_per_unit * exit_cost.bare_tsc.median * def.per_ms /
                            static_cast<double>(tsc_khz);
    const double wrapper = c.exits_saved_per_unit *
                           (exit_cost.wrapper_tsc.median - exit_cost.bare_tsc.median) * def.per_ms /
                           static_cast<double>(tsc_khz);
    if (saved > 0 && !c.within_spread) {
      c.exit_share = modelled / saved;
      c.wrapper_share = wrapper / saved;
    }
  } else {
    c.exits_saved_per_unit = 0;
  }
  return c;
}

// "1.23k -> 1.10k" when the host counts emulated instructions, else "-".
std::string InsnsCell(const SeedComparison& c) {
  if (!c.insns_before || !c.insns_after) return "-";
  return fmt::format("{} -> {}", FormatValue(*c.insns_before), FormatValue(*c.insns_after));
}

// "-" where there is nothing to explain (no saving, or one inside the
// spread); a share above 100% is flagged with "!".
std::string ShareCell(const SeedComparison& c, const std::optional<double>& share) {
  if (!share) return c.within_spread ? "- (~)" : "-";
  const double pct = *share * 100;
  return pct > 100 ? fmt::format("{:.0f}% !", pct) : fmt::format("{:.0f}%", pct);
}

}  // namespace

// An op's name in the guest's list (guest/lib/pvop_list.h).
static std::string Op(guest::PvOp op) { return guest::PvOpName(op); }

const std::vector<SeedDef>& SeedDefs() {
  static const std::vector<SeedDef> kSeeds = {
      {"TLS shadow copies", Op(guest::PvOp::kTls), "ctx,tls=same", "lat_ctx", "us per switch", 1,
       1e3, "-9% (lmbench lat_ctx)"},
      {"TLS shadow copies", Op(guest::PvOp::kTls), "pipe,tls=same", "lat_pipe", "us per round trip",
       2, 1e3, "-7% (lmbench lat_pipe)"},
      {"no stts/clts pair", Op(guest::PvOp::kFpuSwitch), "fpu", "context switch, FPU users",
       "us per yield", 1, 1e3, "-10% (context switch)"},
      {"inline pte_flags", Op(guest::PvOp::kPteFlags), "cpa", "cpa (kernbench proxy)",
       "ns per pte_flags call", 1, 1e6, "the calls cost up to 13% of kernbench time, on AMD"},
      {"conditional irq_restore", Op(guest::PvOp::kIrqRestore), "irq", "irq restore (AIM7 proxy)",
       "ns per restore", 1, 1e6, "+1.3% AIM7 jobs/min (throughput, not a time per restore)"},
  };
  return kSeeds;
}

std::vector<SeedResult> SeedResults(const std::vector<ConfigResult>& results,
                                    const ExitCost& exit_cost, uint64_t tsc_khz) {
  std::vector<SeedResult> out;
  if (tsc_khz == 0) return out;
  for (const SeedDef& def : SeedDefs()) {
    SeedResult r{def, {}};
    if (auto c = Compare(def, "xen", Find(results, def.workload, "xen"),
                         Find(results, def.workload, "xen+" + def.op), exit_cost, tsc_khz))
      r.comparisons.push_back(*c);
    if (auto c = Compare(def, "naive", Find(results, def.workload, "naive"),
                         Find(results, def.workload, def.op), exit_cost, tsc_khz))
      r.comparisons.push_back(*c);
    // pte_flags also has the slow kernel's own form: call sites patched at
    // boot with the translation inline.
    if (def.op == Op(guest::PvOp::kPteFlags)) {
      if (auto c = Compare(def, "naive, to patched", Find(results, def.workload, "naive"),
                           Find(results, def.workload, def.op + "_patched"), exit_cost, tsc_khz))
        r.comparisons.push_back(*c);
    }
    if (!r.comparisons.empty()) out.push_back(std::move(r));
  }
  return out;
}

std::string RenderSeeds(const std::vector<SeedResult>& seeds, const ExitCost& exit_cost,
                        uint64_t tsc_khz, int repeat) {
  if (seeds.empty()) return "";
  std::vector<std::vector<std::string>> rows;
  bool over_100 = false;
  for (const SeedResult& s : seeds) {
    for (const SeedComparison& c : s.comparisons) {
      over_100 |= (c.exit_share && *c.exit_share > 1) || (c.wrapper_share && *c.wrapper_share > 1);
      rows.push_back({fmt::format("{}: {}", s.def.seed, s.def.metric), s.def.unit, c.baseline,
                      FormatValue(c.before.median), FormatValue(c.after.median),
                      FormatTimeChange(c.before, c.after),
                      fmt::format("±{:.1f}%", std::max(c.before.spread_pct, c.after.spread_pct)),
                      s.def.published, FormatValue(c.exits_saved_per_unit),
                      ShareCell(c, c.exit_share), ShareCell(c, c.wrapper_share), InsnsCell(c)});
    }
  }
  auto us = [&](double tsc) { return tsc / static_cast<double>(tsc_khz) * 1e3; };
  const Stats& bare = exit_cost.bare_tsc;
  const Stats& wrapped = exit_cost.wrapper_tsc;
  std::string out =
      "\n" +
      RenderTable(
          fmt::format("The seeds in their own units, backend=pv, guest time net of the loop, "
                      "median of {} runs: each seed optimized alone against Xen's baseline "
                      "(pvops=xen: the seeds naive, batching on, the shared-memory interrupt "
                      "flag) and against all naive; `~`: the change is inside the runs' spread",
                      repeat),
          {"seed: metric", "unit", "baseline", "before", "after", "change", "spread",
           "published (the seed's own benchmark)", "exits saved", "explained by exits",
           "by the guest's wrapper", "emulated insns per unit"},
          rows) +
      fmt::format(
          "exit-cost model: one bare exit (a null `out`, nothing around it) costs {:.2f} us of "
          "guest time here (workload=exitcost, median of {}, ±{:.1f}%); through the timed "
          "kernel's Hypercall() wrapper {:.2f} us (±{:.1f}%), so the wrapper adds {:.2f} us per "
          "hypercall (the uncounted kernel's: a call and a test; the counted kernel's, with "
          "--guest-counters on, also its counting). \"explained by exits\" = exits saved x the "
          "bare cost / time saved, only for a change outside the spread; \"by the guest's "
          "wrapper\" = exits saved x what the wrapper adds / time saved; the rest is the ops' "
          "other instructions (docs/RESULTS.md)\n",
          us(bare.median), bare.values.size(), bare.spread_pct, us(wrapped.median),
          wrapped.spread_pct, us(wrapped.median - bare.median));
  if (over_100)
    out +=
        "!: above 100%: the exits saved, at the bare exit's cost, exceed the time saved (an exit "
        "costs the workload less than the bare loop's, or the rest of the change costs time)\n";
  return out;
}

json SeedsToJson(const std::vector<SeedResult>& seeds) {
  json out = json::array();
  for (const SeedResult& s : seeds) {
    for (const SeedComparison& c : s.comparisons) {
      out.push_back(
          {{"seed", s.def.seed},
           {"op", s.def.op},
           {"workload", s.def.workload},
           {"metric", s.def.metric},
           {"unit", s.def.unit},
           {"published", s.def.published},
           {"baseline", c.baseline},
           {"before_configuration", c.before_config},
           {"after_configuration", c.after_config},
           {"before", StatsToJson(c.before)},
           {"after", StatsToJson(c.after)},
           {"change_pct", ChangePct(c.before.median, c.after.median)},
           {"within_spread", c.within_spread},
           {"exits_saved_per_unit", c.exits_saved_per_unit},
           {"explained_by_exits", c.exit_share ? json(*c.exit_share) : json(nullptr)},
           {"explained_by_guest_wrapper", c.wrapper_share ? json(*c.wrapper_share) : json(nullptr)},
           {"emulated_insns_per_unit",
            {{"before", c.insns_before ? json(*c.insns_before) : json(nullptr)},
             {"after", c.insns_after ? json(*c.insns_after) : json(nullptr)}}}});
    }
  }
  return out;
}

}  // namespace minivmm::cli
