#include "cli/exit_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "cli/report_value.h"
#include "cli/sites_table.h"
#include "lib/cmdline.h"
#include "minivmm/exit_stats.h"

namespace minivmm::cli {
namespace {

using nlohmann::json;

void Row(std::string& out, std::string_view what, const json& ops, const json& exits,
         std::string_view source) {
  fmt::format_to(std::back_inserter(out), "  {:<28} {:>12} {:>12}  {}\n", what,
                 ops.is_null() ? std::string("-") : ops.dump(),
                 exits.is_null() ? std::string("-") : exits.dump(), source);
}

// A row with the wasted-exit analysis's column: wasted ops / exits.
void WastedRow(std::string& out, std::string_view what, const json& count, const json& wasted,
               std::string_view source) {
  const std::string w = wasted.is_object()
                            ? fmt::format("{} / {}", wasted["ops"].dump(), wasted["exits"].dump())
                            : std::string("-");
  fmt::format_to(std::back_inserter(out), "  {:<28} {:>12} {:>12} {:>16}  {}\n", what,
                 count["ops"].dump(), count["exits"].dump(), w, source);
}

void WastedHeader(std::string& out, std::string_view what) {
  fmt::format_to(std::back_inserter(out), "\n  {:<28} {:>12} {:>12} {:>16}  {}\n", what, "ops",
                 "exits", "wasted ops/exits", "source");
}

// The causes of a record's `causes` object in the order of docs/design.md
// "What the VMM counts", then any other (newer) cause in the record.
std::vector<std::string> CauseOrder(const json& causes) {
  static const std::vector<std::string> kOrder = [] {
    std::vector<std::string> v;
    for (int c = 0; c < static_cast<int>(Cause::kCount); ++c)
      v.emplace_back(CauseName(static_cast<Cause>(c)));
    return v;
  }();
  std::vector<std::string> out;
  for (const std::string& name : kOrder)
    if (causes.contains(name)) out.push_back(name);
  for (const auto& [name, c] : causes.items())
    if (std::find(kOrder.begin(), kOrder.end(), name) == kOrder.end()) out.push_back(name);
  return out;
}

// vCPU columns per block of the per-vCPU table (more vCPUs: more blocks).
constexpr size_t kVcpuColumns = 8;

// One row of the per-vCPU table: `cell(v)` for each vCPU of the block, then
// the run's total. Rows that are zero everywhere are left out.
void VcpuRow(std::string& out, std::string_view what, const json& per_vcpu, size_t from, size_t to,
             const std::function<uint64_t(const json&)>& cell, uint64_t total,
             bool always = false) {
  std::string cells;
  bool any = always || total != 0;
  for (size_t v = from; v < to; ++v) {
    const uint64_t n = cell(per_vcpu[v]);
    any = any || n != 0;
    fmt::format_to(std::back_inserter(cells), " {:>9}", n);
  }
  if (any) fmt::format_to(std::back_inserter(out), "  {:<28}{} {:>10}\n", what, cells, total);
}

// Exits by cause, hypercall and reason of each vCPU (source vmm), beside
// the run's totals: the table of a run with several vCPUs.
void RenderPerVcpu(std::string& out, const json& record) {
  const json& per_vcpu = record["exits"]["per_vcpu"];
  const json& causes = record["causes"]["causes"];
  const json& calls = record["hypercalls"]["calls"];
  const json& by_reason = record["exits"]["by_reason"];
  const auto count = [](const json& v, const char* group, const std::string& name,
                        const char* field) -> uint64_t {
    const json& g = v.value(group, json::object());
    if (!g.contains(name)) return 0;
    return field == nullptr ? g[name].get<uint64_t>() : g[name].value(field, uint64_t{0});
  };
  for (size_t from = 0; from < per_vcpu.size(); from += kVcpuColumns) {
    const size_t to = std::min(per_vcpu.size(), from + kVcpuColumns);
    std::string header;
    for (size_t v = from; v < to; ++v)
      fmt::format_to(std::back_inserter(header), " {:>9}", fmt::format("vCPU {}", v));
    fmt::format_to(std::back_inserter(out), "\n  {:<28}{} {:>10}  {}\n", "exits per vCPU", header,
                   "total", "source vmm");
    for (const std::string& name : CauseOrder(causes)) {
      VcpuRow(
          out, "cause " + name, per_vcpu, from, to,
          [&](const json& v) { return count(v, "causes", name, "exits"); },
          causes[name].value("exits", uint64_t{0}));
    }
    for (const auto& [name, c] : calls.items()) {
      VcpuRow(
          out, "hypercall " + name, per_vcpu, from, to,
          [&](const json& v) { return count(v, "hypercalls", name, "exits"); },
          c.value("exits", uint64_t{0}));
    }
    for (const auto& [name, n] : by_reason.items()) {
      VcpuRow(
          out, "reason " + name, per_vcpu, from, to,
          [&](const json& v) { return count(v, "by_reason", name, nullptr); }, n.get<uint64_t>());
    }
    // What each vCPU took or deferred without an exit of its own.
#define MINIVMM_SCALAR_NAME_(name) #name,
    for (const char* key : {MINIVMM_SCALAR_COUNTER_LIST(MINIVMM_SCALAR_NAME_)}) {
#undef MINIVMM_SCALAR_NAME_
      VcpuRow(
          out, key, per_vcpu, from, to, [key](const json& v) { return v.value(key, uint64_t{0}); },
          record["causes"].value(key, uint64_t{0}));
    }
    VcpuRow(
        out, "total", per_vcpu, from, to,
        [](const json& v) { return v.value("total", uint64_t{0}); },
        record["exits"]["total"].get<uint64_t>(), /*always=*/true);
  }
}

// The stop, its time and the configuration the guest says it used (it parses
// the command line).
void HeaderSection(std::string& out, const json& record) {
  const json& result = record["result"];
  fmt::format_to(std::back_inserter(out), "minivmm: {} ({}), {:.3f} s\n",
                 result["stop_reason"].get<std::string>(), result["detail"].get<std::string>(),
                 result["elapsed_ns"].get<int64_t>() / 1e9);
  const json& guest = record["guest"]["reports"];
  if (guest.contains("config.backend")) {
    std::string pvops;
    for (int i = 0; i < guest::kPvOpCount; ++i) {
      const char* op = guest::PvOpName(static_cast<guest::PvOp>(i));
      std::string key = std::string("config.pvops.") + op;
      if (guest.contains(key))
        pvops += fmt::format("{}{}:{}", pvops.empty() ? "" : ",", op, ReportText(guest[key]));
    }
    fmt::format_to(std::back_inserter(out), "guest:   backend={} workload={} pvops={}\n",
                   ReportText(guest["config.backend"]),
                   guest.contains("config.workload") ? ReportText(guest["config.workload"]) : "?",
                   pvops);
  }
}

// Exits by cause, in the order of docs/design.md "What the VMM counts" (not
// the JSON object's alphabetical one), and what the causes carry beside:
// entries per multicall, trapped GDT stores, IPIs, lock waits.
void CauseSection(std::string& out, const json& record, const json* wasted) {
  if (wasted != nullptr) {
    WastedHeader(out, "exits by cause");
  } else {
    fmt::format_to(std::back_inserter(out), "\n  {:<28} {:>12} {:>12}  {}\n", "exits by cause",
                   "ops", "exits", "source");
  }
  for (const std::string& name : CauseOrder(record["causes"]["causes"])) {
    const json& c = record["causes"]["causes"][name];
    if (wasted != nullptr) {
      WastedRow(out, name, c, (*wasted)["by_cause"].value(name, json()), "vmm");
    } else {
      Row(out, name, c["ops"], c["exits"], "vmm");
    }
    if (name == "if_set")
      Row(out, "  of which irq window", nullptr, c["host_dependent_exits"], "vmm (host-dependent)");
  }
  const json& histogram = record["causes"]["multicall_entries_histogram_log2"];
  std::string buckets;
  for (size_t i = 0; i < histogram.size(); ++i) {
    uint64_t n = histogram[i].get<uint64_t>();
    if (n == 0) continue;
    std::string range = i == 0   ? "0"
                        : i == 1 ? "1"
                                 : fmt::format("{}-{}", 1u << (i - 1), (1u << i) - 1);
    if (i + 1 == histogram.size()) range = fmt::format("{}+", 1u << (i - 1));
    buckets += fmt::format("{}{}:{}", buckets.empty() ? "" : " ", range, n);
  }
  if (!buckets.empty())
    fmt::format_to(std::back_inserter(out), "  {:<28} {}  vmm\n", "  entries per multicall",
                   buckets);
  const json& gdt = record["causes"]["gdt_stores"];
  if (gdt["applied"].get<uint64_t>() + gdt["rejected"].get<uint64_t>() > 0)
    fmt::format_to(std::back_inserter(out), "  {:<28} {} applied, {} rejected  vmm\n",
                   "  trapped GDT stores", gdt["applied"].get<uint64_t>(),
                   gdt["rejected"].get<uint64_t>());
  const uint64_t ipis = record["causes"].value("ipi_injections", uint64_t{0});
  const uint64_t deferred = record["causes"].value("tlb_flushes_deferred", uint64_t{0});
  if (ipis + deferred > 0)
    fmt::format_to(std::back_inserter(out), "  {:<28} {} injected, {} TLB flushes deferred  vmm\n",
                   "  IPIs", ipis, deferred);
  const uint64_t slept = record["causes"].value("lock_waits_slept", uint64_t{0});
  const uint64_t kicked = record["causes"].value("lock_wakes_by_kick", uint64_t{0});
  const uint64_t directed = record["causes"].value("directed_yields", uint64_t{0});
  if (slept + kicked + directed > 0)
    fmt::format_to(std::back_inserter(out),
                   "  {:<28} {} slept, {} woken by a kick, {} directed yields  vmm\n",
                   "  lock waits", slept, kicked, directed);
}

// Ops and exits by hypercall; with the analysis, the wasted ones by reason
// and the verdicts it took from the guest.
void HypercallSection(std::string& out, const json& record, const json* wasted) {
  if (wasted != nullptr) {
    WastedHeader(out, "hypercalls");
  } else {
    fmt::format_to(std::back_inserter(out), "\n  {:<28} {:>12} {:>12}  {}\n", "hypercalls", "ops",
                   "exits", "source");
  }
  for (const auto& [name, c] : record["hypercalls"]["calls"].items()) {
    const std::string source = c["errors"].get<uint64_t>() > 0
                                   ? fmt::format("vmm ({} errors)", c["errors"].get<uint64_t>())
                                   : std::string("vmm");
    if (wasted != nullptr) {
      WastedRow(out, name, c, (*wasted)["by_hypercall"].value(name, json()), source);
    } else {
      Row(out, name, c["ops"], c["exits"], source);
    }
  }
  if (wasted != nullptr) {
    std::string reasons;
    for (const auto& [reason, n] : (*wasted)["by_reason"].items())
      reasons += fmt::format("{}{} {} / {}", reasons.empty() ? "" : ", ", reason, n["ops"].dump(),
                             n["exits"].dump());
    fmt::format_to(std::back_inserter(out), "  {:<28} {}  vmm\n", "  wasted by reason", reasons);
    // A verdict the VMM took from the guest without checking it.
    fmt::format_to(std::back_inserter(out),
                   "  {:<28} {} CR0.TS pairs (clear tagged for #NM)  guest\n",
                   "  kept by the guest's word", (*wasted).value("ts_pairs_kept_by_guest", 0));
  }
}

// Exits by KVM exit reason, the total, and by device.
void ReasonSection(std::string& out, const json& record) {
  fmt::format_to(std::back_inserter(out), "\n  {:<28} {:>12} {:>12}  {}\n", "exits by reason", "",
                 "exits", "source");
  for (const auto& [name, n] : record["exits"]["by_reason"].items())
    Row(out, name, nullptr, n, "vmm");
  Row(out, "total", nullptr, record["exits"]["total"], "vmm");
  for (const char* bus : {"pio_by_device", "mmio_by_device"}) {
    for (const auto& [name, n] : record["exits"][bus].items()) {
      if (n.get<uint64_t>() == 0) continue;
      Row(out, fmt::format("{} {}", bus[0] == 'p' ? "pio" : "mmio", name), nullptr, n, "vmm");
    }
  }
}

// What the guest says it did (kernel totals), to set beside the VMM's.
void GuestCountsSection(std::string& out, const json& record) {
  const json& reports = record["guest"]["reports"];
  bool header = false;
  for (const char* key : {"switches", "syscalls", "nm_traps", "fpu_preloads", "fpu_owner_preloads",
                          "irq_restores_if_set", "irq_restores_if_clear", "irq_enables",
                          "irq_disables", "irq_unmasks", "irq_unmasks_pending", "cr0_writes",
                          "cr3_writes", "timer_irqs", "check.passed", "check.failed"}) {
    std::string name =
        std::string(key).find('.') == std::string::npos ? std::string("kernel.") + key : key;
    if (!reports.contains(name)) continue;
    // A number, or in a record of run schema version 1 a string of digits.
    const json& v = reports[name];
    std::optional<double> n = ReportNumber(v);
    if (!n) continue;
    if (!header) {
      fmt::format_to(std::back_inserter(out), "\n  {:<28} {:>12} {:>12}  {}\n",
                     "guest's own counts", "", "count", "source");
      header = true;
    }
    Row(out, name, nullptr, v.is_number() ? v : json(static_cast<int64_t>(*n)), "guest");
  }
}

// The host's KVM statistics over the run, those that moved.
void HostCountersSection(std::string& out, const json& record) {
  const json& host = record["host_counters"]["deltas"];
  if (!host.empty()) {
    fmt::format_to(std::back_inserter(out), "\n  {:<28} {:>12} {:>12}  {}\n", "host counters", "",
                   "delta", "source");
    for (const auto& [name, n] : host.items()) {
      if (n.get<uint64_t>() != 0) Row(out, name, nullptr, n, "kvm-stats (host-dependent)");
    }
  }
}

// Every exit KVM made, by hardware reason (--kernel-exits), beside the
// userspace ones above.
void KernelExitsSection(std::string& out, const json& record) {
  if (!record.contains("kernel_exits") || !record["kernel_exits"].is_object()) return;
  const json& k = record["kernel_exits"];
  // Every exit by reason, and how many of them KVM handled itself and how
  // many reached minivmm.
  fmt::format_to(std::back_inserter(out), "\n  {:<28} {:>12} {:>12} {:>12}  {}\n",
                 "in-kernel exits by reason", "exits", "in kernel", "to minivmm", "source");
  auto reason_row = [&](std::string_view what, uint64_t exits, uint64_t to_vmm) {
    fmt::format_to(std::back_inserter(out), "  {:<28} {:>12} {:>12} {:>12}  {}\n", what, exits,
                   exits - to_vmm, to_vmm, "kvm:kvm_exit");
  };
  uint64_t all_to_vmm = 0;
  for (const auto& [name, n] : k["by_reason"].items()) {
    const uint64_t to_vmm = k["to_vmm_by_reason"].value(name, uint64_t{0});
    all_to_vmm += to_vmm;
    reason_row(name, n.get<uint64_t>(), to_vmm);
  }
  reason_row("total", k["exits"].get<uint64_t>(), all_to_vmm);
  if (k["lost"].get<uint64_t>() != 0) Row(out, "lost (ring overflow)", nullptr, k["lost"], "perf");
  // KVM's count of its returns to minivmm beside minivmm's own.
  uint64_t returns = 0;
  for (const auto& [name, n] : k["returns"].items()) returns += n.get<uint64_t>();
  const uint64_t counted = record["exits"]["total"].get<uint64_t>();
  fmt::format_to(std::back_inserter(out), "  {:<28} {:>12} {:>12} {:>12}  {}\n",
                 "returns of KVM_RUN", "", "", returns,
                 returns == counted
                     ? "kvm:kvm_userspace_exit, as minivmm counted"
                     : fmt::format("kvm:kvm_userspace_exit; minivmm counted {}", counted));
  // What the exits' own tracepoints said of them, most first.
  if (!k["by_detail"].empty()) {
    std::vector<std::pair<uint64_t, std::string>> details;
    for (const json& d : k["by_detail"])
      details.emplace_back(
          d["exits"].get<uint64_t>(),
          fmt::format("{} {}", d["reason"].get<std::string>(), d["detail"].get<std::string>()));
    std::stable_sort(details.begin(), details.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    fmt::format_to(std::back_inserter(out), "\n  {:<28} {:>12}\n", "in-kernel exits by detail",
                   "exits");
    for (const auto& [n, what] : details)
      fmt::format_to(std::back_inserter(out), "  {:<28} {:>12}\n", what, n);
  }
  // By phase: each console line (PC) or report (built-in) ends one. Its
  // exits and its three biggest reasons.
  if (k.contains("phases") && k["phases"].size() > 1) {
    fmt::format_to(std::back_inserter(out), "\n  {:<40} {:>8}  {}\n",
                   "in-kernel exits by phase (what ended it)", "exits", "most");
    for (const json& phase : k["phases"]) {
      std::vector<std::pair<uint64_t, std::string>> reasons;
      for (const auto& [name, n] : phase["by_reason"].items())
        reasons.emplace_back(n.get<uint64_t>(), name);
      std::sort(reasons.rbegin(), reasons.rend());
      std::string most;
      for (size_t i = 0; i < reasons.size() && i < 3; ++i)
        most += fmt::format("{}{} {}", i ? ", " : "", reasons[i].second, reasons[i].first);
      std::string line = phase["line"].get<std::string>();
      if (line.empty()) line = "(to the end)";
      if (line.size() > 40) line = line.substr(0, 37) + "...";
      fmt::format_to(std::back_inserter(out), "  {:<40} {:>8}  {}\n", line,
                     phase["exits"].get<uint64_t>(), most);
    }
  }
  // With --sites: where they come from, most first: the RIP's function and
  // line, and below it the rest of the exit's stack where the host gave
  // stacks (docs/design.md "In-kernel exits").
  if (!k.contains("sites")) return;
  constexpr size_t kShown = 20;
  fmt::format_to(std::back_inserter(out), "\n  {:<28} {:>12} {:>12}  {}\n", "in-kernel exit sites",
                 "exits", "in kernel", "at");
  size_t shown = 0;
  for (const json& site : k["sites"]) {
    if (shown++ == kShown) {
      fmt::format_to(std::back_inserter(out), "  ... {} more in the record\n",
                     k["sites"].size() - kShown);
      break;
    }
    std::string at = "?";
    if (!site["frames"].empty()) {
      const json& leaf = site["frames"].front();
      at = leaf.value("function", "");
      if (at.empty()) at = leaf.value("pc", "?");
      if (leaf.contains("file"))
        at += fmt::format(" ({}:{})", leaf["file"].get<std::string>(), leaf.value("line", 0));
    }
    const uint64_t exits = site["exits"].get<uint64_t>();
    fmt::format_to(std::back_inserter(out), "  {:<28} {:>12} {:>12}  {}\n",
                   site["reason"].get<std::string>(), exits, exits - site["to_vmm"].get<uint64_t>(),
                   at);
    if (site["frames"].size() > 1)
      fmt::format_to(std::back_inserter(out), "  {:<54}  <- {}\n", "", SiteChain(site["frames"]));
  }
}

}  // namespace

std::string RenderExitTable(const json& record) {
  std::string out;
  HeaderSection(out, record);
  // The wasted-exit analysis's column, when it ran (docs/wasted-exits.md).
  const json* wasted =
      record.contains("wasted") && record["wasted"].is_object() ? &record["wasted"] : nullptr;
  // Causes and hypercalls are the hypercall ABI's: shown where the machine
  // has the hypercall port (not on the PC machine, docs/machines.md).
  if (record["exits"]["pio_by_device"].contains("hypercall")) {
    CauseSection(out, record, wasted);
    HypercallSection(out, record, wasted);
  }
  ReasonSection(out, record);
  GuestCountsSection(out, record);
  const json& per_vcpu = record["exits"]["per_vcpu"];
  if (per_vcpu.is_array() && per_vcpu.size() > 1) RenderPerVcpu(out, record);
  HostCountersSection(out, record);
  KernelExitsSection(out, record);
  out += RenderSitesSection(record);
  return out;
}

std::string VcpuStopLine(const json& record) {
  const json& result = record["result"];
  const json& vcpus = result["vcpus"];
  std::string line = fmt::format("{} vCPUs: ", vcpus.size());
  const json& by = result["stopped_by_vcpu"];
  if (by.is_null()) {
    line += fmt::format("the host stopped the run ({})", result["stop_reason"].get<std::string>());
  } else {
    line += fmt::format("vCPU {} stopped the run ({})", by.get<int>(),
                        result["stop_reason"].get<std::string>());
  }
  std::vector<std::string> idle, other;
  for (const json& v : vcpus) {
    const std::string n = std::to_string(v["vcpu"].get<int>());
    if (v["idle"].get<bool>()) {
      idle.push_back(n);
    } else if (!v["with_vm"].get<bool>() && (by.is_null() || v["vcpu"] != by) &&
               v["stop_reason"] != result["stop_reason"]) {
      // Stopped by itself at the same time, for another reason.
      other.push_back(fmt::format("vCPU {} {}", n, v["stop_reason"].get<std::string>()));
    }
  }
  if (!idle.empty()) line += fmt::format("; idle: vCPU {}", fmt::join(idle, ", "));
  if (!other.empty()) line += fmt::format("; also: {}", fmt::join(other, ", "));
  return line;
}

}  // namespace minivmm::cli
