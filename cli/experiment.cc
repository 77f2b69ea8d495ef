#include "cli/experiment.h"

#include <csignal>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/exit_codes.h"
#include "lib/cmdline.h"

namespace minivmm::cli {

std::string ComposeGuestCommandLine(const std::string& backend, const std::string& pvops,
                                    const std::string& workload, const std::string& extra) {
  std::vector<std::string> words;
  if (!backend.empty()) words.push_back("backend=" + backend);
  if (!pvops.empty()) words.push_back("pvops=" + pvops);
  if (!workload.empty()) words.push_back("workload=" + workload);
  if (!extra.empty()) words.push_back(extra);
  return absl::StrJoin(words, " ");
}

const std::vector<std::string>& GuestBackends() {
  static const std::vector<std::string> kBackends = {"pv", "native"};
  return kBackends;
}

const std::vector<BenchConfiguration>& BenchConfigurations() {
  // Items of pvops= apply in order (guest/README.md), so "naive,<op>:..."
  // is all naive with one op changed. Which ops and variants: the guest's
  // list's bench and seed columns (guest/lib/pvop_list.h), in its order.
  static const std::vector<BenchConfiguration> kConfigurations = [] {
    std::vector<const guest::PvOpInfo*> seeds;
    std::vector<BenchConfiguration> v = {{"naive", "naive"}};
    for (int i = 0; i < guest::kPvOpCount; ++i) {
      const guest::PvOpInfo& op = guest::PvOpInfoOf(static_cast<guest::PvOp>(i));
      const std::string name = op.name;
      bool first = true;
      const std::vector<std::string> variants = absl::StrSplit(op.bench, '|', absl::SkipEmpty());
      for (const std::string& variant : variants) {
        v.push_back({first ? name : absl::StrCat(name, "_", variant),
                     absl::StrCat("naive,", name, ":", variant)});
        first = false;
      }
      if (op.seed) seeds.push_back(&op);
    }
    v.push_back({"optimized", "optimized"});
    v.push_back({"xen", "xen", true});
    for (const guest::PvOpInfo* op : seeds)
      v.push_back(
          {absl::StrCat("xen+", op->name), absl::StrCat("xen,", op->name, ":optimized"), true});
    return v;
  }();
  return kConfigurations;
}

std::string BenchConfigurationNames() {
  std::vector<std::string> names;
  for (const BenchConfiguration& c : BenchConfigurations()) names.push_back(c.name);
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<std::vector<const BenchConfiguration*>> SelectBenchConfigurations(
    const std::string& names) {
  const std::vector<BenchConfiguration>& all = BenchConfigurations();
  std::vector<bool> chosen(all.size(), names.empty());
  auto choose = [&](absl::string_view name) {
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].name != name) continue;
      chosen[i] = true;
      return true;
    }
    return false;
  };
  for (absl::string_view name : absl::StrSplit(names, ',', absl::SkipWhitespace())) {
    if (!choose(name)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown configuration '", name,
                                                     "' (known: ", BenchConfigurationNames(), ")"));
    }
    if (absl::StartsWith(name, "xen+")) choose("xen");
  }
  choose("naive");
  std::vector<const BenchConfiguration*> out;
  for (size_t i = 0; i < all.size(); ++i)
    if (chosen[i]) out.push_back(&all[i]);
  return out;
}

std::string RunFailure(const RunResult& r) {
  if (r.reason != StopReason::kGuestShutdown) {
    return absl::StrCat(std::string(StopReasonName(r.reason)), ": ", r.detail);
  }
  if (r.exit_code != 0) return absl::StrCat("guest shut down with code ", r.exit_code);
  for (const auto& [key, value] : r.reports.entries) {
    if (key == "check.failed" && value != "0") return "guest self-checks failed: " + value;
  }
  return "";
}

int ExitStatusFor(const RunResult& r, int stop_signal) {
  switch (r.reason) {
    case StopReason::kGuestShutdown:
      return r.exit_code & 0xff;
    case StopReason::kTripleFault:
      return kExitTripleFault;
    case StopReason::kEmulationFailure:
      return kExitEmulationFailure;
    case StopReason::kHaltedForever:
      return kExitHaltedForever;
    case StopReason::kTimeout:
      return kExitTimeout;
    case StopReason::kStopRequested:
      return stop_signal == SIGTERM ? kExitSigterm : kExitSigint;
    case StopReason::kVmmError:
      return kExitVmmError;
  }
  return kExitVmmError;
}

}  // namespace minivmm::cli
