#include "cli/bench_plan.h"

#include <csignal>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/file_digest.h"
#include "cli/guest_cmdline.h"
#include "cli/probe_cache.h"
#include "cli/run_record.h"
#include "fmt/format.h"

namespace minivmm::cli {

using nlohmann::json;

std::vector<WorkloadChoice> ParseWorkloads(const std::string& list) {
  std::vector<WorkloadChoice> out;
  for (absl::string_view item : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    std::vector<std::string> parts = absl::StrSplit(item, ':');
    out.push_back({parts[0], absl::StrJoin(parts, ",")});
  }
  return out;
}

std::vector<PlannedRun> Plan(const std::vector<WorkloadChoice>& workloads,
                             const std::vector<std::string>& backends,
                             const std::vector<const BenchConfiguration*>& configurations,
                             int repeat) {
  std::vector<PlannedRun> plan, cycle;
  auto runs_on = [](const BenchConfiguration& c, const std::string& b) {
    return !c.pv_only || b == "pv";
  };
  for (const std::string& b : backends)
    for (const BenchConfiguration* c : configurations)
      if (runs_on(*c, b)) plan.push_back({nullptr, b, c, 0});
  for (const WorkloadChoice& w : workloads)
    for (const std::string& b : backends)
      for (const BenchConfiguration* c : configurations)
        if (runs_on(*c, b)) cycle.push_back({&w, b, c, 0});
  for (int r = 0; r < repeat; ++r) {
    if (r % 2 == 0) {
      for (PlannedRun p : cycle) plan.push_back({p.workload, p.backend, p.config, r});
    } else {
      for (auto it = cycle.rbegin(); it != cycle.rend(); ++it)
        plan.push_back({it->workload, it->backend, it->config, r});
    }
  }
  return plan;
}

std::string GuestCommandLine(const PlannedRun& p) {
  return fmt::format("backend={} pvops={} workload={}", p.backend, p.config->pvops,
                     p.workload ? p.workload->spec : "none");
}

std::string RunName(const PlannedRun& p) {
  return fmt::format("{} {} {}{}", p.workload ? p.workload->name : "none (base)", p.backend,
                     p.config->name,
                     p.workload ? fmt::format(" rep {}", p.repetition + 1) : std::string());
}

BenchMatrix::BenchMatrix(const BenchSettings& settings) : settings_(settings) {
  workloads_ = ParseWorkloads(settings_.workloads);
  backends_ = settings_.backend == "both" ? std::vector<std::string>{"pv", "native"}
                                          : std::vector<std::string>{settings_.backend};
  absl::StatusOr<std::vector<const BenchConfiguration*>> configurations =
      SelectBenchConfigurations(settings_.configurations);
  if (!configurations.ok()) {
    configuration_status_ = configurations.status();
    return;
  }
  configurations_ = *std::move(configurations);
  plan_ = Plan(workloads_, backends_, configurations_, settings_.repeat);
}

absl::Status BenchMatrix::CheckGuestCommandLines() const {
  if (!settings_.kernel.empty()) return absl::OkStatus();
  for (const PlannedRun& p : plan_) {
    if (absl::Status s = CheckGuestCommandLine(GuestCommandLine(p)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

void BenchMatrix::Prepare(bool probe_host, const std::string& builtin_kernel, bool reprobe) {
  if (!settings_.kernel.empty()) {
    kernel_ = settings_.kernel;
  } else {
    kernel_ = !builtin_kernel.empty() ? builtin_kernel : DefaultGuestKernelPath();
    if (!settings_.guest_counters) kernel_ = UncountedGuestKernelPath(kernel_);
  }
  digest_ = FileSha256(kernel_);
  if (!probe_host) return;
  if (absl::StatusOr<HostInfo> host = ProbeHost(); host.ok()) {
    host_ = std::make_unique<HostInfo>(*host);
    // Once per bench (from the probe cache unless `reprobe`); every run
    // record carries it.
    CachedProbeBehaviourInto(*host_, "/dev/kvm", reprobe, builtin_kernel);
  }
}

absl::Status BenchMatrix::Execute(const PlannedRun& p, const BenchHooks& hooks) {
  VmConfig config;
  config.kernel_path = kernel_;
  config.memory_bytes = settings_.memory;
  config.cmdline = GuestCommandLine(p);
  // Wasted exits are bench metrics too; the analysis adds ~10 host
  // instructions to an exit of several microseconds.
  config.analyse_waste = true;
  config.cpus = settings_.cpus;
  if (settings_.timeout_seconds > 0) config.timeout = absl::Seconds(settings_.timeout_seconds);
  absl::StatusOr<std::unique_ptr<Vm>> vm = Vm::Create(config);
  if (!vm.ok()) return vm.status();
  const auto signalled = [&hooks] { return hooks.stop_signal && hooks.stop_signal() != 0; };
  if (hooks.running) hooks.running(vm->get());
  if (signalled()) (*vm)->RequestStop();
  absl::StatusOr<RunResult> result = (*vm)->Run();
  if (hooks.running) hooks.running(nullptr);
  if (!result.ok()) return result.status();
  // A run a signal stopped is not measured: it is one of the missing.
  if (signalled() && result->reason == StopReason::kStopRequested) return absl::OkStatus();
  Executed e{p, MakeRunRecord(config, *result, host_.get(), digest_), RunFailure(*result)};
  if (!e.failure.empty()) {
    // One line: which run, why, and what the guest said last.
    ++failures_;
    // The status is the one `minivmm run` would give the same run.
    if (hooks.error)
      hooks.error(fmt::format("FAILED: {} ({}): status {}, {}{}", RunName(p), config.cmdline,
                              ExitStatusFor(*result, 0), e.failure,
                              result->console_tail.empty()
                                  ? ""
                                  : "; the guest's last line: " + result->console_tail.back()));
    Stop(fmt::format("run {} failed: {}", runs_.size(), e.failure), kBenchRunFailed);
  }
  runs_.push_back(std::move(e));
  return absl::OkStatus();
}

// The guest-side cost of one exit on this host, bare and through the timed
// kernel's wrapper: workload=exitcost, `repeat` times, before the
// matrix.
absl::Status BenchMatrix::MeasureExitCost() {
  std::vector<double> bare, wrapped;
  for (int r = 0; r < settings_.repeat; ++r) {
    VmConfig config;
    config.kernel_path = kernel_;
    config.memory_bytes = settings_.memory;
    config.cmdline = fmt::format("backend={} workload=exitcost", backends_.front());
    config.cpus = settings_.cpus;
    if (settings_.timeout_seconds > 0) config.timeout = absl::Seconds(settings_.timeout_seconds);
    absl::StatusOr<std::unique_ptr<Vm>> vm = Vm::Create(config);
    if (!vm.ok()) return vm.status();
    absl::StatusOr<RunResult> result = (*vm)->Run();
    if (!result.ok()) return result.status();
    if (std::string failure = RunFailure(*result); !failure.empty())
      return absl::InternalError("workload=exitcost: " + failure);
    for (const auto& [key, value] : result->reports.entries) {
      if (key == "exitcost.tsc_net_per_op") bare.push_back(std::stod(value));
      if (key == "exitcost.wrapper_tsc_net_per_op") wrapped.push_back(std::stod(value));
    }
  }
  exit_cost_.bare_tsc = Summarize(std::move(bare));
  exit_cost_.wrapper_tsc = Summarize(std::move(wrapped));
  return absl::OkStatus();
}

bool BenchMatrix::Signalled(const BenchHooks& hooks) {
  const int signo = hooks.stop_signal ? hooks.stop_signal() : 0;
  if (signo != 0)
    Stop(signo == SIGTERM ? "stopped by SIGTERM" : "stopped by SIGINT",
         signo == SIGTERM ? kExitSigterm : kExitSigint);
  return signo != 0;
}

void BenchMatrix::Run(const BenchHooks& hooks) {
  start_ = absl::Now();
  // A signal that comes while a VM is being made can fail that system call
  // (KVM_CREATE_VM: EINTR): the bench was stopped by the signal, and that is
  // what it says, not a VMM error.
  if (!Signalled(hooks)) {
    if (absl::Status s = MeasureExitCost(); !s.ok() && !Signalled(hooks)) {
      if (hooks.error) hooks.error(std::string(s.message()));
      Stop("workload=exitcost failed: " + std::string(s.message()), kExitVmmError);
    }
  }
  for (size_t i = 0; i < plan_.size() && stop_why_.empty() && !Signalled(hooks); ++i) {
    absl::Time t0 = absl::Now();
    if (absl::Status s = Execute(plan_[i], hooks); !s.ok()) {
      if (Signalled(hooks)) break;
      if (hooks.error)
        hooks.error(fmt::format("{}: {}", RunName(plan_[i]), std::string(s.message())));
      Stop(fmt::format("run {}: VMM error: {}", i, std::string(s.message())), kExitVmmError);
    } else if (runs_.size() == i + 1 && hooks.progress) {
      hooks.progress(i + 1, plan_.size(), plan_[i], absl::Now() - t0);
    }
  }
}

uint64_t BenchMatrix::TscKhz() const {
  for (const Executed& e : runs_) {
    const json& khz = e.record["result"]["guest_tsc_khz"];
    if (khz.is_number_unsigned() && khz.get<uint64_t>() > 0) return khz.get<uint64_t>();
  }
  return 0;
}

std::vector<ConfigResult> BenchMatrix::Aggregate() const {
  std::vector<ConfigResult> results;
  for (const WorkloadChoice& w : workloads_) {
    for (const std::string& b : backends_) {
      for (const BenchConfiguration* config : configurations_) {
        const BenchConfiguration& c = *config;
        if (c.pv_only && b != "pv") continue;
        const json* baseline = nullptr;
        std::map<std::string, std::vector<double>> values;
        int runs = 0;
        for (const Executed& e : runs_) {
          if (e.plan.backend == b && e.plan.config == &c && e.plan.workload == nullptr) {
            baseline = &e.record;
          }
        }
        for (const Executed& e : runs_) {
          if (e.plan.workload != &w || e.plan.backend != b || e.plan.config != &c) continue;
          ++runs;
          for (const auto& [name, v] : RunMetrics(e.record, baseline, w.name))
            values[name].push_back(v);
        }
        ConfigResult r{w.name, w.spec, b, c.name, c.pvops, baseline ? "workload" : "whole run",
                       runs,   {}};
        for (auto& [name, v] : values) r.metrics[name] = Summarize(std::move(v));
        results.push_back(std::move(r));
      }
    }
  }
  // A bench stopped early has configurations without a run: no result.
  std::erase_if(results, [](const ConfigResult& r) { return r.runs == 0; });
  return results;
}

void BenchMatrix::ComputeSeeds(const std::vector<ConfigResult>& results) {
  seeds_ = SeedResults(results, exit_cost_, TscKhz());
}

json BenchMatrix::RunEntry(size_t i) const {
  const Executed& e = runs_[i];
  return {{"index", i},
          {"workload", e.plan.workload ? e.plan.workload->name : "none"},
          {"workload_spec", e.plan.workload ? e.plan.workload->spec : "none"},
          {"baseline", e.plan.workload == nullptr},
          {"backend", e.plan.backend},
          {"configuration", e.plan.config->name},
          {"pvops", e.plan.config->pvops},
          {"repetition", e.plan.repetition},
          {"ok", e.failure.empty()},
          {"failure", e.failure},
          {"record", e.record}};
}

json BenchMatrix::Record(const std::vector<ConfigResult>& results) const {
  json provenance = runs_.empty() ? json::object() : runs_.front().record["provenance"];
  provenance["command_line"] = settings_.command_line;
  provenance["started_at"] = absl::FormatTime(absl::RFC3339_sec, start_, absl::UTCTimeZone());
  provenance["elapsed_ns"] = absl::ToInt64Nanoseconds(absl::Now() - start_);
  json configurations = json::array();
  for (const BenchConfiguration* c : configurations_)
    configurations.push_back({{"name", c->name}, {"pvops", c->pvops}});
  json workloads = json::array();
  for (const WorkloadChoice& w : workloads_) workloads.push_back(w.spec);
  json runs = json::array();
  for (size_t i = 0; i < runs_.size(); ++i) runs.push_back(RunEntry(i));
  json out_results = json::array();
  for (const ConfigResult& r : results) out_results.push_back(ConfigResultToJson(r));
  // A bench stopped early says so, and which planned runs it lacks.
  json incomplete = nullptr;
  if (!stop_why_.empty()) {
    json missing = json::array();
    for (size_t i = runs_.size(); i < plan_.size(); ++i) {
      const PlannedRun& p = plan_[i];
      missing.push_back({{"index", i},
                         {"workload", p.workload ? p.workload->name : "none"},
                         {"workload_spec", p.workload ? p.workload->spec : "none"},
                         {"baseline", p.workload == nullptr},
                         {"backend", p.backend},
                         {"configuration", p.config->name},
                         {"repetition", p.repetition}});
    }
    incomplete = {{"reason", stop_why_},
                  {"exit_status", stop_status_},
                  {"planned_runs", plan_.size()},
                  {"completed_runs", runs_.size()},
                  {"missing", missing}};
  }
  return {{"schema", "minivmm.bench"},
          {"schema_version", kBenchRecordSchemaVersion},
          {"provenance", provenance},
          {"settings",
           {{"workloads", workloads},
            {"backends", backends_},
            {"repeat", settings_.repeat},
            {"memory_bytes", settings_.memory},
            {"timeout_seconds", settings_.timeout_seconds},
            {"cpus", settings_.cpus},
            {"guest_counters",
             settings_.kernel.empty() ? json(settings_.guest_counters) : json("its own")},
            {"order", "baselines, then repetitions alternately forwards and backwards"},
            {"configurations", configurations}}},
          {"complete", stop_why_.empty()},
          {"incomplete", incomplete},
          {"failures", failures_},
          {"exit_cost",
           {{"workload", "exitcost"},
            {"guest_tsc_per_exit", StatsToJson(exit_cost_.bare_tsc)},
            {"guest_tsc_per_wrapped_hypercall", StatsToJson(exit_cost_.wrapper_tsc)},
            {"guest_tsc_khz", TscKhz()}}},
          {"seeds", SeedsToJson(seeds_)},
          {"results", out_results},
          {"runs", runs}};
}

}  // namespace minivmm::cli
