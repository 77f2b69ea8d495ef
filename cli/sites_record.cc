#include "cli/sites_record.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "cli/site_names.h"
#include "fmt/format.h"

namespace minivmm::cli {
namespace {

using json = nlohmann::json;

// The sites of every vCPU, each with its count per vCPU.
struct Merged {
  SiteCount total;
  std::vector<uint64_t> by_vcpu;
};

json Wasted(const SiteCount& count) {
  json wasted = json::object();
  for (int r = 0; r < static_cast<int>(WasteReason::kCount); ++r)
    wasted[std::string(WasteReasonName(static_cast<WasteReason>(r)))] = count.wasted[r];
  return wasted;
}

}  // namespace

json SitesRecord(const RunResult& result, const std::string& kernel_path) {
  absl::flat_hash_map<ExitSite, Merged> merged;
  uint64_t unplaced = 0;
  for (size_t v = 0; v < result.sites_per_vcpu.size(); ++v) {
    const ExitSites& sites = result.sites_per_vcpu[v];
    unplaced += sites.wasted_unplaced;
    for (const auto& [site, count] : sites.counts) {
      Merged& m = merged[site];
      m.by_vcpu.resize(result.sites_per_vcpu.size());
      m.by_vcpu[v] += count.exits;
      m.total.exits += count.exits;
      m.total.batchable += count.batchable;
      for (size_t r = 0; r < count.wasted.size(); ++r) m.total.wasted[r] += count.wasted[r];
    }
  }
  std::vector<std::pair<const ExitSite*, const Merged*>> order;
  for (const auto& [site, m] : merged) order.emplace_back(&site, &m);
  // Most exits first; ties in a fixed order (by the stack's addresses).
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    if (a.second->total.exits != b.second->total.exits)
      return a.second->total.exits > b.second->total.exits;
    return std::lexicographical_compare(a.first->stack().begin(), a.first->stack().end(),
                                        b.first->stack().begin(), b.first->stack().end());
  });
  SiteNames names(kernel_path);
  json stacks = json::array();
  for (const auto& [site, m] : order) {
    json one = {
        {"cause", SiteCauseName(*site)}, {"reason", std::string(ExitReasonName(site->reason))},
        {"exits", m->total.exits},       {"batchable", m->total.batchable},
        {"by_vcpu", m->by_vcpu},         {"frames", SiteFrames(*site, names)},
    };
    if (site->hypercall >= 0) {
      const size_t nr = static_cast<size_t>(site->hypercall);
      one["hypercall"] = nr < result.hypercall_names.size() && !result.hypercall_names[nr].empty()
                             ? result.hypercall_names[nr]
                             : fmt::format("nr{}", nr);
    }
    if (site->user) one["user"] = true;
    if (!result.per_vcpu.empty() && result.per_vcpu[0].waste_analysed)
      one["wasted"] = Wasted(m->total);
    stacks.push_back(std::move(one));
  }
  json sites = {{"symbols", names.error().empty() ? kernel_path : names.error()},
                {"stacks", std::move(stacks)}};
  if (!result.per_vcpu.empty() && result.per_vcpu[0].waste_analysed)
    sites["wasted_unplaced"] = unplaced;
  return sites;
}

std::string FoldedStacks(const json& record) {
  // Two stacks that differ only in addresses fold to one line.
  std::vector<std::string> lines;
  absl::flat_hash_map<std::string, uint64_t> counts;
  auto add = [&](std::string line, const json& frames, uint64_t exits) {
    if (exits == 0) return;
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) line += ";" + FrameName(*it);
    auto [at, inserted] = counts.try_emplace(line, 0);
    if (inserted) lines.push_back(line);
    at->second += exits;
  };
  for (const json& stack : record["sites"]["stacks"]) {
    std::string root = stack["cause"].get<std::string>();
    if (stack["cause"] == "none")
      root = stack.value("hypercall", stack["reason"].get<std::string>());
    add(root, stack["frames"], stack["exits"].get<uint64_t>());
  }
  // With --kernel-exits, the exits KVM handled in the kernel, rooted at
  // "kvm:" and their hardware reason (the rest reached minivmm and are
  // above already).
  if (record.contains("kernel_exits") && record["kernel_exits"].is_object() &&
      record["kernel_exits"].contains("sites")) {
    for (const json& site : record["kernel_exits"]["sites"])
      add("kvm:" + site["reason"].get<std::string>(), site["frames"],
          site["exits"].get<uint64_t>() - site["to_vmm"].get<uint64_t>());
  }
  std::string out;
  for (const std::string& line : lines) out += fmt::format("{} {}\n", line, counts[line]);
  return out;
}

// The in-kernel exits' sites (--kernel-exits with --sites): each (reason,
// stack) with its functions and lines, the stack the guest's frame pointers
// gave at the exit (RunResult::kernel_exit_stacks); where the host gave no
// stacks, each (reason, guest RIP), one frame deep.
json KernelExitSites(const RunResult& result, SiteNames& names) {
  KernelExitCounts all;
  for (const KernelExitCounts& c : result.kernel_exits) all.Add(c);
  std::map<std::pair<std::string, std::vector<uint64_t>>, uint64_t> exits, to_vmm;
  if (result.kernel_exit_stacks) {
    exits = all.by_reason_stack;
    to_vmm = all.to_vmm_by_reason_stack;
  } else {
    for (const auto& [key, n] : all.by_reason_rip) exits[{key.first, {key.second}}] = n;
    for (const auto& [key, n] : all.to_vmm_by_reason_rip) to_vmm[{key.first, {key.second}}] = n;
  }
  std::vector<std::pair<std::pair<std::string, std::vector<uint64_t>>, uint64_t>> order(
      exits.begin(), exits.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  json sites = json::array();
  for (const auto& [key, n] : order) {
    const auto kept = to_vmm.find(key);
    sites.push_back({{"reason", key.first},
                     {"exits", n},
                     {"to_vmm", kept == to_vmm.end() ? 0 : kept->second},
                     {"frames", StackFrames(key.second, names)}});
  }
  return sites;
}

void AddSites(json& record, const RunResult& result, const std::string& kernel_path) {
  if (result.sites_per_vcpu.empty()) return;
  record["sites"] = SitesRecord(result, kernel_path);
  if (!result.kernel_exits.empty() && record["kernel_exits"].is_object()) {
    SiteNames names(kernel_path);
    record["kernel_exits"]["sites"] = KernelExitSites(result, names);
  }
}

}  // namespace minivmm::cli
