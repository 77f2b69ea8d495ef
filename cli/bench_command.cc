// minivmm bench: every workload with all ops naive, each op optimized alone
// and all optimized, repeated and interleaved, run in this process through
// the public API; the seed patches' before/after tables, JSON and CSV.
// --cpus N gives every VM N vCPUs (the titles and the records say so).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <tuple>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/bench_record.h"
#include "cli/bench_seeds.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/file_digest.h"
#include "cli/guest_cmdline.h"
#include "cli/output_file.h"
#include "cli/plot_script.h"
#include "cli/probe_cache.h"
#include "cli/run_record.h"
#include "fmt/format.h"
#include "minivmm/host_info.h"
#include "minivmm/vm.h"
#include "minivmm_abi/boot.h"

namespace minivmm::cli {
namespace {

using nlohmann::json;

struct WorkloadChoice {
  std::string name;  // "ctx"
  std::string spec;  // guest workload= value: "ctx,rounds=50"
};

struct PlannedRun {
  const WorkloadChoice* workload;  // null for a baseline (workload=none)
  std::string backend;
  const BenchConfiguration* config;
  int repetition;  // 0-based
};

// "ctx:rounds=50:tasks=4,irq" -> {ctx, "ctx,rounds=50,tasks=4"}, {irq, "irq"}.
std::vector<WorkloadChoice> ParseWorkloads(const std::string& list) {
  std::vector<WorkloadChoice> out;
  for (absl::string_view item : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    std::vector<std::string> parts = absl::StrSplit(item, ':');
    out.push_back({parts[0], absl::StrJoin(parts, ",")});
  }
  return out;
}

std::string Clock(absl::Duration d) {
  int64_t s = absl::ToInt64Seconds(d);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

// The runs in execution order: one baseline (workload=none) per backend and
// configuration, then the repetitions. Repetition r runs the list of
// (workload, backend, configuration) forwards when r is even and backwards
// when odd (A B .. B A), so that a slow drift of the machine weighs on every
// configuration alike.
std::vector<PlannedRun> Plan(const std::vector<WorkloadChoice>& workloads,
                             const std::vector<std::string>& backends, int repeat) {
  std::vector<PlannedRun> plan, cycle;
  auto runs_on = [](const BenchConfiguration& c, const std::string& b) {
    return !c.pv_only || b == "pv";
  };
  for (const std::string& b : backends)
    for (const BenchConfiguration& c : BenchConfigurations())
      if (runs_on(c, b)) plan.push_back({nullptr, b, &c, 0});
  for (const WorkloadChoice& w : workloads)
    for (const std::string& b : backends)
      for (const BenchConfiguration& c : BenchConfigurations())
        if (runs_on(c, b)) cycle.push_back({&w, b, &c, 0});
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

// SIGINT/SIGTERM stop the running VM and then the bench, which writes what
// it has (docs/run-record.md "A bench stopped early").
std::atomic<Vm*> g_bench_vm{nullptr};
std::atomic<int> g_bench_signal{0};

void OnBenchSignal(int signo) {
  g_bench_signal.store(signo);
  if (Vm* vm = g_bench_vm.load()) vm->RequestStop();
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

struct Executed {
  PlannedRun plan;
  json record;
  std::string failure;  // "" when the guest shut down with 0 and no failed check
};

class Bench {
 public:
  explicit Bench(const BenchOptions& o) : o_(o) {}

  int Run();

 private:
  absl::Status Execute(const PlannedRun& p);
  void PrintProgress(size_t i, size_t n, const PlannedRun& p, absl::Duration took);
  std::vector<ConfigResult> Aggregate() const;
  json BenchRecord(const std::vector<ConfigResult>& results) const;
  int WriteOutputs(const std::vector<ConfigResult>& results);

  absl::Status MeasureExitCost();
  uint64_t TscKhz() const;

  absl::Status CreateOutputs();
  void Stop(std::string why, int status) {
    stop_why_ = std::move(why);
    stop_status_ = status;
  }

  const BenchOptions& o_;
  std::unique_ptr<OutputFile> json_out_, csv_out_, plot_out_;
  std::vector<PlannedRun> plan_;
  std::string stop_why_;  // "" when every planned run completed
  int stop_status_ = 0;
  std::vector<SeedResult> seeds_;
  ExitCost exit_cost_;  // guest TSC per null hypercall, bare and wrapped (workload=exitcost)
  std::vector<WorkloadChoice> workloads_;
  std::vector<std::string> backends_;
  std::string kernel_, digest_;
  std::unique_ptr<HostInfo> host_;
  std::vector<Executed> runs_;
  absl::Time start_;
  int failures_ = 0;
};

absl::Status Bench::Execute(const PlannedRun& p) {
  VmConfig config;
  config.kernel_path = kernel_;
  config.memory_bytes = o_.memory;
  config.cmdline = GuestCommandLine(p);
  // Wasted exits are bench metrics too; the analysis adds ~10 host
  // instructions to an exit of several microseconds.
  config.analyse_waste = true;
  config.cpus = o_.cpus;
  if (o_.timeout_seconds > 0) config.timeout = absl::Seconds(o_.timeout_seconds);
  absl::StatusOr<std::unique_ptr<Vm>> vm = Vm::Create(config);
  if (!vm.ok()) return vm.status();
  g_bench_vm.store(vm->get());
  if (g_bench_signal.load() != 0) (*vm)->RequestStop();
  absl::StatusOr<RunResult> result = (*vm)->Run();
  g_bench_vm.store(nullptr);
  if (!result.ok()) return result.status();
  // A run a signal stopped is not measured: it is one of the missing.
  if (g_bench_signal.load() != 0 && result->reason == StopReason::kStopRequested)
    return absl::OkStatus();
  Executed e{p, MakeRunRecord(config, *result, host_.get(), digest_), RunFailure(*result)};
  if (!e.failure.empty()) {
    // One line: which run, why, and what the guest said last.
    ++failures_;
    // The status is the one `minivmm run` would give the same run.
    fmt::print(stderr, "minivmm bench: FAILED: {} ({}): status {}, {}{}\n", RunName(p),
               config.cmdline, ExitStatusFor(*result, 0), e.failure,
               result->console_tail.empty()
                   ? ""
                   : "; the guest's last line: " + result->console_tail.back());
    Stop(fmt::format("run {} failed: {}", runs_.size(), e.failure), kBenchRunFailed);
  }
  runs_.push_back(std::move(e));
  return absl::OkStatus();
}

void Bench::PrintProgress(size_t i, size_t n, const PlannedRun& p, absl::Duration took) {
  absl::Duration elapsed = absl::Now() - start_;
  absl::Duration left = elapsed / static_cast<double>(i) * static_cast<double>(n - i);
  fmt::print(
      stderr, "bench [{:>{}}/{}] {:<12} {:<6} {:<11} {:<9} {:6.2f} s  elapsed {}  left ~{}\n", i,
      std::to_string(n).size(), n, p.workload ? p.workload->name : "none (base)", p.backend,
      p.config->name, p.workload ? fmt::format("rep {}/{}", p.repetition + 1, o_.repeat) : "",
      absl::ToDoubleSeconds(took), Clock(elapsed), Clock(left));
}

// The guest-side cost of one exit on this host, bare and through the
// kernel's counted wrapper: workload=exitcost, `repeat` times, before the
// matrix.
absl::Status Bench::MeasureExitCost() {
  std::vector<double> bare, wrapped;
  for (int r = 0; r < o_.repeat; ++r) {
    VmConfig config;
    config.kernel_path = kernel_;
    config.memory_bytes = o_.memory;
    config.cmdline = fmt::format("backend={} workload=exitcost", backends_.front());
    config.cpus = o_.cpus;
    if (o_.timeout_seconds > 0) config.timeout = absl::Seconds(o_.timeout_seconds);
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

// The guest TSC rate the runs reported (KVM_GET_TSC_KHZ), 0 when unknown.
uint64_t Bench::TscKhz() const {
  for (const Executed& e : runs_) {
    const json& khz = e.record["result"]["guest_tsc_khz"];
    if (khz.is_number_unsigned() && khz.get<uint64_t>() > 0) return khz.get<uint64_t>();
  }
  return 0;
}

std::vector<ConfigResult> Bench::Aggregate() const {
  std::vector<ConfigResult> results;
  for (const WorkloadChoice& w : workloads_) {
    for (const std::string& b : backends_) {
      for (const BenchConfiguration& c : BenchConfigurations()) {
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
  return results;
}

json Bench::BenchRecord(const std::vector<ConfigResult>& results) const {
  json provenance = runs_.empty() ? json::object() : runs_.front().record["provenance"];
  provenance["command_line"] = o_.command_line;
  provenance["started_at"] = absl::FormatTime(absl::RFC3339_sec, start_, absl::UTCTimeZone());
  provenance["elapsed_ns"] = absl::ToInt64Nanoseconds(absl::Now() - start_);
  json configurations = json::array();
  for (const BenchConfiguration& c : BenchConfigurations())
    configurations.push_back({{"name", c.name}, {"pvops", c.pvops}});
  json workloads = json::array();
  for (const WorkloadChoice& w : workloads_) workloads.push_back(w.spec);
  json runs = json::array();
  for (size_t i = 0; i < runs_.size(); ++i) {
    const Executed& e = runs_[i];
    runs.push_back({{"index", i},
                    {"workload", e.plan.workload ? e.plan.workload->name : "none"},
                    {"workload_spec", e.plan.workload ? e.plan.workload->spec : "none"},
                    {"baseline", e.plan.workload == nullptr},
                    {"backend", e.plan.backend},
                    {"configuration", e.plan.config->name},
                    {"pvops", e.plan.config->pvops},
                    {"repetition", e.plan.repetition},
                    {"ok", e.failure.empty()},
                    {"failure", e.failure},
                    {"record", e.record}});
  }
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
            {"repeat", o_.repeat},
            {"memory_bytes", o_.memory},
            {"timeout_seconds", o_.timeout_seconds},
            {"cpus", o_.cpus},
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

// Every output file exists (as a temporary file beside it) before the first
// VM, the host probe's included, runs.
absl::Status Bench::CreateOutputs() {
  for (auto [path, what, out] : {std::tuple{&o_.json_path, "bench record", &json_out_},
                                 std::tuple{&o_.csv_path, "CSV", &csv_out_},
                                 std::tuple{&o_.plot_path, "plot", &plot_out_}}) {
    if (path->empty()) continue;
    absl::StatusOr<std::unique_ptr<OutputFile>> f = OutputFile::Create(*path, what);
    if (!f.ok()) return f.status();
    *out = *std::move(f);
  }
  return absl::OkStatus();
}

int Bench::WriteOutputs(const std::vector<ConfigResult>& results) {
  auto commit = [](OutputFile& out, const std::string& text) {
    out.Write(text);
    absl::Status s = out.Commit();
    if (!s.ok()) fmt::print(stderr, "minivmm bench: {}\n", std::string(s.message()));
    return s.ok();
  };
  std::string csv = ResultsCsv(results, o_.cpus);
  // The CSV has one row per result: a bench stopped early says so after them.
  if (!stop_why_.empty())
    csv += fmt::format("# incomplete: {}; {} of {} runs done (the bench record lists the rest)\n",
                       stop_why_, runs_.size(), plan_.size());
  if (json_out_ != nullptr && !commit(*json_out_, BenchRecord(results).dump(1) + "\n"))
    return kExitVmmError;
  if (csv_out_ != nullptr && !commit(*csv_out_, csv)) return kExitVmmError;
  if (plot_out_ != nullptr) {
    // The script reads the committed record, or a scratch copy.
    std::string json_path = o_.json_path;
    if (json_path.empty()) {
      char tmpl[] = "/tmp/minivmm-bench-XXXXXX";
      int fd = mkstemp(tmpl);
      if (fd >= 0) close(fd);
      json_path = tmpl;
      std::unique_ptr<FILE, int (*)(FILE*)> f(fopen(tmpl, "w"), fclose);
      std::string text = BenchRecord(results).dump(1) + "\n";
      if (f == nullptr || fwrite(text.data(), 1, text.size(), f.get()) != text.size()) {
        fmt::print(stderr, "minivmm bench: cannot write {}\n", json_path);
        unlink(tmpl);
        return kExitVmmError;
      }
    }
    int status = RunPlotScript(json_path, plot_out_->temp_path());
    if (o_.json_path.empty()) unlink(json_path.c_str());
    if (status != kPlotOk) return kBenchPlotFailed;
    if (absl::Status s = plot_out_->Commit(); !s.ok()) {
      fmt::print(stderr, "minivmm bench: {}\n", std::string(s.message()));
      return kExitVmmError;
    }
  }
  return 0;
}

int Bench::Run() {
  workloads_ = ParseWorkloads(o_.workloads);
  if (workloads_.empty()) {
    fmt::print(stderr, "minivmm bench: --workloads is empty\n");
    return kExitUsage;
  }
  backends_ = o_.backend == "both" ? std::vector<std::string>{"pv", "native"}
                                   : std::vector<std::string>{o_.backend};
  plan_ = Plan(workloads_, backends_, o_.repeat);
  // Usage errors before any VM runs: a command line the built-in guest
  // would refuse (another --kernel checks its own), an output file that
  // cannot be created.
  if (o_.kernel.empty()) {
    for (const PlannedRun& p : plan_) {
      if (absl::Status s = CheckGuestCommandLine(GuestCommandLine(p)); !s.ok()) {
        fmt::print(stderr, "minivmm bench: {}\n", std::string(s.message()));
        return kExitUsage;
      }
    }
  }
  if (absl::Status s = CreateOutputs(); !s.ok()) {
    fmt::print(stderr, "minivmm bench: {}\n", std::string(s.message()));
    return kExitUsage;
  }
  struct sigaction action {};
  action.sa_handler = OnBenchSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  auto signalled = [this] {
    const int signo = g_bench_signal.load();
    if (signo != 0)
      Stop(signo == SIGTERM ? "stopped by SIGTERM" : "stopped by SIGINT",
           signo == SIGTERM ? kExitSigterm : kExitSigint);
    return signo != 0;
  };

  kernel_ = o_.kernel.empty() ? DefaultGuestKernelPath() : o_.kernel;
  digest_ = FileSha256(kernel_);
  if (absl::StatusOr<HostInfo> host = ProbeHost(); host.ok()) {
    host_ = std::make_unique<HostInfo>(*host);
    // Once per bench (from the probe cache unless --reprobe); every run
    // record carries it.
    CachedProbeBehaviourInto(*host_, "/dev/kvm", o_.reprobe, MINIVMM_VERSION);
  }

  start_ = absl::Now();
  if (!signalled()) {
    if (absl::Status s = MeasureExitCost(); !s.ok()) {
      fmt::print(stderr, "minivmm bench: {}\n", std::string(s.message()));
      Stop("workload=exitcost failed: " + std::string(s.message()), kExitVmmError);
    }
  }
  for (size_t i = 0; i < plan_.size() && stop_why_.empty() && !signalled(); ++i) {
    absl::Time t0 = absl::Now();
    if (absl::Status s = Execute(plan_[i]); !s.ok()) {
      fmt::print(stderr, "minivmm bench: {}: {}\n", RunName(plan_[i]), std::string(s.message()));
      Stop(fmt::format("run {}: VMM error: {}", i, std::string(s.message())), kExitVmmError);
    } else if (runs_.size() == i + 1 && !o_.quiet) {
      PrintProgress(i + 1, plan_.size(), plan_[i], absl::Now() - t0);
    }
  }
  if (!stop_why_.empty()) {
    fmt::print(stderr, "minivmm bench: {} after {} of {} runs; writing what was measured\n",
               stop_why_, runs_.size(), plan_.size());
  }

  std::vector<ConfigResult> results = Aggregate();
  // A bench stopped early has configurations without a run: no result.
  std::erase_if(results, [](const ConfigResult& r) { return r.runs == 0; });
  // Every run had o_.cpus vCPUs; said in each table's title when more than one.
  const std::string vcpus = o_.cpus > 1 ? fmt::format(", {} vCPUs", o_.cpus) : "";
  for (size_t i = 0; i < results.size();) {
    // One workload and backend: its configurations, all naive first.
    std::vector<const ConfigResult*> group;
    for (size_t k = i; k < results.size() && results[k].workload_spec == results[i].workload_spec &&
                       results[k].backend == results[i].backend;
         ++k)
      group.push_back(&results[k]);
    i += group.size();
    auto optimized_it = std::find_if(group.begin(), group.end(), [](const ConfigResult* r) {
      return r->configuration == "optimized";
    });
    // Stopped early: only the tables whose both ends were measured.
    if (group.front()->configuration != "naive" || optimized_it == group.end()) continue;
    const ConfigResult& naive = *group.front();
    const ConfigResult& optimized = **optimized_it;
    fmt::print("{}\n{}\n",
               RenderBeforeAfter(fmt::format("{} (workload={}), backend={}{}: all naive -> all "
                                             "optimized; median of {} runs, {} only",
                                             naive.workload, naive.workload_spec, naive.backend,
                                             vcpus, optimized.runs, naive.scope),
                                 "before", "after", naive, optimized),
               RenderConfigurations(
                   fmt::format("{} (workload={}), backend={}{}: one op optimized at a time, "
                               "against all naive",
                               naive.workload, naive.workload_spec, naive.backend, vcpus),
                   group));
  }
  seeds_ = SeedResults(results, exit_cost_, TscKhz());
  fmt::print("{}", RenderSeeds(seeds_, exit_cost_, TscKhz(), o_.repeat));
  // A failed run stops the bench: its status is the stop's, unless a file
  // could not be written (nothing of it is left).
  const int status = WriteOutputs(results);
  if (status == kExitVmmError || stop_why_.empty()) return status;
  return stop_status_;
}

}  // namespace

void AddBenchFlags(CLI::App& app, BenchOptions& o) {
  app.add_option("--workloads", o.workloads,
                 "Comma-separated workloads, each NAME[:k=v...], e.g. ctx:rounds=50,irq")
      ->capture_default_str();
  app.add_option("--backend", o.backend, "Guest backend(s)")
      ->check(CLI::IsMember({"pv", "native", "both"}))
      ->capture_default_str();
  app.add_option("--repeat", o.repeat, "Runs per workload, backend and configuration")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--json", o.json_path, "Write the bench record (JSON) here");
  app.add_option("--csv", o.csv_path, "Write one row per result and metric (CSV) here");
  app.add_option("--plot", o.plot_path,
                 "Draw the figures into this image (.png, .svg, .pdf) or page (.html)");
  app.add_option("--kernel", o.kernel, "Guest ELF (default: the built-in guest)");
  app.add_option("--memory", o.memory, "Guest RAM per run, e.g. 64M")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--timeout", o.timeout_seconds, "Stop a run after this many seconds (0 = never)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  app.add_option("--cpus", o.cpus,
                 "vCPUs of every run (the workload runs on vCPU 0, the others idle)")
      ->check(CLI::Range(1u, static_cast<uint32_t>(MVMM_MAX_CPUS)))
      ->capture_default_str();
  app.add_flag("--quiet,-q", o.quiet, "No progress lines");
  app.add_flag("--reprobe", o.reprobe,
               "Probe the host again instead of reusing its cached probe (docs/run-record.md)");
}

int BenchCommand(const BenchOptions& options) { return Bench(options).Run(); }

}  // namespace minivmm::cli
