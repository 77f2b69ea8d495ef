#include "cli/experiment.h"

#include <csignal>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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
  // is all naive with one op changed. The op names are the guest's list's
  // (guest/lib/pvop_list.h); the bench runs the four seeds, batching and fs_base.
  static const std::vector<BenchConfiguration> kConfigurations = [] {
    using guest::PvOp;
    auto name = [](PvOp op) { return std::string(guest::PvOpName(op)); };
    constexpr PvOp kSeeds[] = {PvOp::kIrqRestore, PvOp::kFpuSwitch, PvOp::kTls, PvOp::kPteFlags};
    std::vector<BenchConfiguration> v = {{"naive", "naive"}};
    for (PvOp op : kSeeds) v.push_back({name(op), "naive," + name(op) + ":optimized"});
    v.push_back(
        {name(PvOp::kPteFlags) + "_patched", "naive," + name(PvOp::kPteFlags) + ":patched"});
    v.push_back({name(PvOp::kBatch), "naive," + name(PvOp::kBatch) + ":on"});
    // Not a seed: the FS base writes of ctx/pipe with fs=base
    // (docs/exit-model.md "5."); elsewhere it changes nothing.
    v.push_back({name(PvOp::kFsBase), "naive," + name(PvOp::kFsBase) + ":optimized"});
    v.push_back({"optimized", "optimized"});
    v.push_back({"xen", "xen", true});
    for (PvOp op : kSeeds) v.push_back({"xen+" + name(op), "xen," + name(op) + ":optimized", true});
    return v;
  }();
  return kConfigurations;
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
