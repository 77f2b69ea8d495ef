#include "cli/sites_table.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string_view>
#include <vector>

#include "fmt/format.h"

namespace minivmm::cli {
namespace {

using json = nlohmann::json;

// Stacks shown per cause, and wasted lines in all.
constexpr size_t kTopSites = 5;
constexpr size_t kTopWasted = 10;

// What each verdict (WasteReasonName) says to do about the exits it marks.
struct Remedy {
  std::string_view verdict;
  std::string_view remedy;
};
constexpr Remedy kRemedies[] = {
    {"same_value", "keep a shadow of what was sent and skip unchanged values"},
    {"cancelled_pair", "the operation is undone before anything used it: drop both"},
    {"all_entries_wasted", "every entry changed nothing: skip the whole multicall"},
};

// What to do about exits a batch could have carried (SiteCount::batchable).
constexpr std::string_view kBatchRemedy =
    "queue the run of calls in a lazy mode and send them as one multicall";

std::string_view RemedyFor(std::string_view verdict) {
  for (const Remedy& r : kRemedies)
    if (r.verdict == verdict) return r.remedy;
  return "";
}

std::string Where(const json& stack) {
  const json& frames = stack["frames"];
  std::string site = frames.empty() ? "?" : SiteName(frames[0]);
  if (stack.value("user", false)) site += " (ring 3)";
  return site;
}

uint64_t WastedOf(const json& stack) {
  uint64_t sum = 0;
  if (stack.contains("wasted"))
    for (const auto& [verdict, n] : stack["wasted"].items()) sum += n.get<uint64_t>();
  return sum;
}

}  // namespace

std::string SiteName(const json& frame) {
  std::string name = frame.value("function", "");
  if (name.empty()) name = frame.value("pc", "?");
  if (frame.contains("file"))
    name += fmt::format(" {}:{}", frame["file"].get<std::string>(), frame.value("line", 0));
  return name;
}

std::string RenderSitesSection(const json& record) {
  if (!record.contains("sites") || !record["sites"].is_object()) return "";
  const json& sites = record["sites"];
  const bool wasted = sites.contains("wasted_unplaced");
  std::string out;
  auto line = std::back_inserter(out);
  fmt::format_to(line, "\n  exits by site (docs/sites.md; symbols: {})\n",
                 sites["symbols"].get<std::string>());
  // The causes in the order of their most frequent stack.
  std::vector<std::string> causes;
  std::map<std::string, std::vector<const json*>> by_cause;
  for (const json& stack : sites["stacks"]) {
    std::string cause = stack["cause"];
    if (cause == "none") cause = stack.value("hypercall", stack["reason"].get<std::string>());
    if (by_cause[cause].empty()) causes.push_back(cause);
    by_cause[cause].push_back(&stack);
  }
  for (const std::string& cause : causes) {
    const std::vector<const json*>& stacks = by_cause[cause];
    uint64_t total = 0;
    for (const json* s : stacks) total += (*s)["exits"].get<uint64_t>();
    fmt::format_to(line, "  {}: {} exits at {} stacks\n", cause, total, stacks.size());
    for (size_t i = 0; i < std::min(stacks.size(), kTopSites); ++i) {
      const json& s = *stacks[i];
      const std::string w = wasted ? fmt::format(" ({} wasted)", WastedOf(s)) : "";
      fmt::format_to(line, "    {:>10}{}  {}\n", s["exits"].get<uint64_t>(), w, Where(s));
      if (s["frames"].size() > 1) fmt::format_to(line, "      <- {}\n", SiteChain(s["frames"]));
    }
    if (stacks.size() > kTopSites)
      fmt::format_to(line, "    ... {} more stacks\n", stacks.size() - kTopSites);
  }
  if (!wasted) return out;

  // Wasted exits by stack and verdict, most first.
  struct Wasted {
    uint64_t exits;
    std::string verdict;
    const json* stack;
  };
  std::vector<Wasted> rows;
  for (const json& stack : sites["stacks"])
    for (const auto& [verdict, n] : stack["wasted"].items())
      if (n.get<uint64_t>() != 0) rows.push_back({n.get<uint64_t>(), verdict, &stack});
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Wasted& a, const Wasted& b) { return a.exits > b.exits; });
  fmt::format_to(line, "\n  wasted exits by site\n");
  for (size_t i = 0; i < std::min(rows.size(), kTopWasted); ++i) {
    const Wasted& r = rows[i];
    fmt::format_to(line, "    {:>10} {:<18} {} <- {}: {}\n", r.exits, r.verdict, Where(*r.stack),
                   SiteChain((*r.stack)["frames"]), RemedyFor(r.verdict));
  }
  if (rows.size() > kTopWasted) fmt::format_to(line, "    ... {} more\n", rows.size() - kTopWasted);
  if (const uint64_t unplaced = sites["wasted_unplaced"]; unplaced != 0)
    fmt::format_to(line, "    {:>10} wasted exits whose site was no longer known\n", unplaced);

  // Exits a batch could have carried, by stack, most first.
  std::vector<std::pair<uint64_t, const json*>> batchable;
  uint64_t all = 0;
  for (const json& stack : sites["stacks"]) {
    const uint64_t n = stack.value("batchable", uint64_t{0});
    if (n != 0) batchable.emplace_back(n, &stack);
    all += n;
  }
  if (batchable.empty()) return out;
  std::stable_sort(batchable.begin(), batchable.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  fmt::format_to(line, "\n  exits a batch could have carried: {}\n", all);
  for (size_t i = 0; i < std::min(batchable.size(), kTopWasted); ++i) {
    const json& s = *batchable[i].second;
    fmt::format_to(line, "    {:>10} {} <- {}: {}\n", batchable[i].first, Where(s),
                   SiteChain(s["frames"]), kBatchRemedy);
  }
  if (batchable.size() > kTopWasted)
    fmt::format_to(line, "    ... {} more\n", batchable.size() - kTopWasted);
  return out;
}

std::string SiteChain(const json& frames) {
  std::string out;
  for (size_t i = 1; i < frames.size(); ++i) {
    if (!out.empty()) out += " <- ";
    out += SiteName(frames[i]);
  }
  return out;
}

}  // namespace minivmm::cli
