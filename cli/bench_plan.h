// The plan of `minivmm bench` and its execution, shared by the CLI
// (cli/bench_command.cc) and the Python module (python/minivmm_py.cc,
// minivmm.bench): the workloads parsed from --workloads, the runs in their
// order, the exit-cost runs, every run's record, the per-configuration
// results, the seeds, and the bench record (schema "minivmm.bench",
// docs/run-record.md). What the driver adds (signals, progress, tables,
// files) comes in through BenchHooks or is done between the steps.
#ifndef MINIVMM_CLI_BENCH_PLAN_H_
#define MINIVMM_CLI_BENCH_PLAN_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "cli/bench_record.h"
#include "cli/bench_seeds.h"
#include "cli/experiment.h"
#include "minivmm/host_info.h"
#include "minivmm/vm.h"
#include "nlohmann/json.hpp"

namespace minivmm::cli {

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
std::vector<WorkloadChoice> ParseWorkloads(const std::string& list);

// The runs in execution order: one baseline (workload=none) per backend and
// configuration, then the repetitions. Repetition r runs the list of
// (workload, backend, configuration) forwards when r is even and backwards
// when odd (A B .. B A), so that a slow drift of the machine weighs on every
// configuration alike.
std::vector<PlannedRun> Plan(const std::vector<WorkloadChoice>& workloads,
                             const std::vector<std::string>& backends,
                             const std::vector<const BenchConfiguration*>& configurations,
                             int repeat);

// "backend=pv pvops=naive workload=ctx,rounds=50".
std::string GuestCommandLine(const PlannedRun& p);
// "ctx pv naive rep 1", "none (base) pv naive".
std::string RunName(const PlannedRun& p);

// What a bench runs (`minivmm bench`'s flags, cli/commands.h BenchOptions).
struct BenchSettings {
  std::string workloads;  // --workloads: "ctx:rounds=50,irq"
  std::string backend;    // pv, native, both
  int repeat = 1;
  uint64_t memory = 64ull << 20;
  double timeout_seconds = 120;  // 0: none
  uint32_t cpus = 1;
  std::string kernel;        // "" : the built-in guest (DefaultGuestKernelPath)
  std::string command_line;  // for provenance
  // With the built-in guest: its counted kernel (true) or, as bench times
  // by default, the uncounted one (UncountedGuestKernelPath).
  bool guest_counters = false;
  // --configurations: the names SelectBenchConfigurations takes ("" for all).
  std::string configurations;
};

// What the driver does at the bench's turns; every hook may be empty.
struct BenchHooks {
  // The VM that is about to run, then nullptr once it has (a signal handler
  // stops it).
  std::function<void(Vm*)> running;
  // The signal (SIGINT, SIGTERM) that asked the bench to stop, or 0.
  std::function<int()> stop_signal;
  // One line on a failed run or a VMM error (the CLI prints it after
  // "minivmm bench: ").
  std::function<void(const std::string&)> error;
  // After run `i` (1-based) of `n` was recorded; `took` is its wall time.
  std::function<void(size_t i, size_t n, const PlannedRun&, absl::Duration took)> progress;
};

class BenchMatrix {
 public:
  struct Executed {
    PlannedRun plan;
    nlohmann::json record;
    std::string failure;  // "" when the guest shut down with 0 and no failed check
  };

  // Parses the workloads and the configurations and makes the plan;
  // `workloads()` is empty when settings.workloads names none, and
  // `configuration_status()` is not ok (and the plan empty) when
  // settings.configurations names one that does not exist.
  explicit BenchMatrix(const BenchSettings& settings);
  BenchMatrix(const BenchMatrix&) = delete;
  BenchMatrix& operator=(const BenchMatrix&) = delete;

  const std::vector<WorkloadChoice>& workloads() const { return workloads_; }
  const absl::Status& configuration_status() const { return configuration_status_; }
  // Whether the plan runs configuration `name`.
  bool Runs(std::string_view name) const {
    for (const BenchConfiguration* c : configurations_)
      if (c->name == name) return true;
    return false;
  }
  const std::vector<PlannedRun>& plan() const { return plan_; }
  const std::vector<Executed>& runs() const { return runs_; }
  const ExitCost& exit_cost() const { return exit_cost_; }
  const std::vector<SeedResult>& seeds() const { return seeds_; }
  const std::string& stop_why() const { return stop_why_; }  // "" when every planned run completed
  int stop_status() const { return stop_status_; }

  // A command line the built-in guest would refuse (with settings.kernel
  // empty; another kernel checks its own), before any VM runs.
  absl::Status CheckGuestCommandLines() const;

  // The guest image (settings.kernel, else `builtin_kernel`, else
  // DefaultGuestKernelPath; uncounted unless settings.guest_counters) and its
  // digest; with `probe_host`, the host
  // (ProbeHost, then the host probe once per bench: every run record
  // carries it).
  void Prepare(bool probe_host, const std::string& builtin_kernel = "", bool reprobe = false);

  // The exit-cost runs, then the plan in order, until a run fails, a VMM
  // error or a signal (hooks.stop_signal) stops it.
  void Run(const BenchHooks& hooks);

  // The results of every workload, backend and configuration that ran at
  // least once, in plan order.
  std::vector<ConfigResult> Aggregate() const;
  // seeds() from `results` (after Aggregate).
  void ComputeSeeds(const std::vector<ConfigResult>& results);
  // The guest TSC rate the runs reported (KVM_GET_TSC_KHZ), 0 when unknown.
  uint64_t TscKhz() const;

  // The bench record of `results` (what `minivmm bench --json` writes).
  nlohmann::json Record(const std::vector<ConfigResult>& results) const;
  // Run i's entry of the record's "runs".
  nlohmann::json RunEntry(size_t i) const;

 private:
  absl::Status Execute(const PlannedRun& p, const BenchHooks& hooks);
  absl::Status MeasureExitCost();
  bool Signalled(const BenchHooks& hooks);
  void Stop(std::string why, int status) {
    stop_why_ = std::move(why);
    stop_status_ = status;
  }

  BenchSettings settings_;
  std::vector<WorkloadChoice> workloads_;
  std::vector<std::string> backends_;
  std::vector<const BenchConfiguration*> configurations_;
  absl::Status configuration_status_;
  std::vector<PlannedRun> plan_;
  std::string stop_why_;
  int stop_status_ = 0;
  std::vector<SeedResult> seeds_;
  ExitCost exit_cost_;  // guest TSC per null hypercall, bare and wrapped (workload=exitcost)
  std::string kernel_, digest_;
  std::unique_ptr<HostInfo> host_;
  std::vector<Executed> runs_;
  absl::Time start_;
  int failures_ = 0;
};

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_BENCH_PLAN_H_
