// minivmm bench: every workload with all ops naive, each op changed alone
// and all optimized, repeated and interleaved, run in this process through
// the public API; the seed patches' before/after tables, JSON and CSV.
// --cpus N gives every VM N vCPUs (the titles and the records say so);
// --configurations runs only those it names, with their references.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <tuple>

#include "CLI/CLI.hpp"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/bench_metrics.h"
#include "cli/bench_plan.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output_file.h"
#include "cli/plot_script.h"
#include "fmt/format.h"
#include "minivmm/vm.h"
#include "minivmm_abi/boot.h"

namespace minivmm::cli {
namespace {

std::string Clock(absl::Duration d) {
  int64_t s = absl::ToInt64Seconds(d);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

// SIGINT/SIGTERM stop the running VM and then the bench, which writes what
// it has (docs/run-record.md "A bench stopped early").
std::atomic<Vm*> g_bench_vm{nullptr};
std::atomic<int> g_bench_signal{0};

void OnBenchSignal(int signo) {
  g_bench_signal.store(signo);
  if (Vm* vm = g_bench_vm.load()) vm->RequestStop();
}

class Bench {
 public:
  explicit Bench(const BenchOptions& o) : o_(o), matrix_(Settings(o)) {}

  int Run();

 private:
  static BenchSettings Settings(const BenchOptions& o) {
    return {o.workloads, o.backend, o.repeat,       o.memory,         o.timeout_seconds,
            o.cpus,      o.kernel,  o.command_line, o.guest_counters, o.configurations};
  }
  void PrintProgress(size_t i, size_t n, const PlannedRun& p, absl::Duration took);
  int WriteOutputs(const std::vector<ConfigResult>& results);

  absl::Status CreateOutputs();

  const BenchOptions& o_;
  BenchMatrix matrix_;
  std::unique_ptr<OutputFile> json_out_, csv_out_, plot_out_;
  absl::Time start_;
};

void Bench::PrintProgress(size_t i, size_t n, const PlannedRun& p, absl::Duration took) {
  absl::Duration elapsed = absl::Now() - start_;
  absl::Duration left = elapsed / static_cast<double>(i) * static_cast<double>(n - i);
  fmt::print(
      stderr, "bench [{:>{}}/{}] {:<12} {:<6} {:<11} {:<9} {:6.2f} s  elapsed {}  left ~{}\n", i,
      std::to_string(n).size(), n, p.workload ? p.workload->name : "none (base)", p.backend,
      p.config->name, p.workload ? fmt::format("rep {}/{}", p.repetition + 1, o_.repeat) : "",
      absl::ToDoubleSeconds(took), Clock(elapsed), Clock(left));
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
  if (!matrix_.stop_why().empty())
    csv += fmt::format("# incomplete: {}; {} of {} runs done (the bench record lists the rest)\n",
                       matrix_.stop_why(), matrix_.runs().size(), matrix_.plan().size());
  if (json_out_ != nullptr && !commit(*json_out_, matrix_.Record(results).dump(1) + "\n"))
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
      std::string text = matrix_.Record(results).dump(1) + "\n";
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
  if (matrix_.workloads().empty()) {
    fmt::print(stderr, "minivmm bench: --workloads is empty\n");
    return kExitUsage;
  }
  if (const absl::Status& s = matrix_.configuration_status(); !s.ok()) {
    fmt::print(stderr, "minivmm bench: --configurations: {}\n", std::string(s.message()));
    return kExitUsage;
  }
  // Usage errors before any VM runs: a command line the built-in guest
  // would refuse (another --kernel checks its own), an output file that
  // cannot be created.
  if (absl::Status s = matrix_.CheckGuestCommandLines(); !s.ok()) {
    fmt::print(stderr, "minivmm bench: {}\n", std::string(s.message()));
    return kExitUsage;
  }
  if (absl::Status s = CreateOutputs(); !s.ok()) {
    fmt::print(stderr, "minivmm bench: {}\n", std::string(s.message()));
    return kExitUsage;
  }
  struct sigaction action {};
  action.sa_handler = OnBenchSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  matrix_.Prepare(/*probe_host=*/true, /*builtin_kernel=*/"", o_.reprobe);
  BenchHooks hooks;
  hooks.running = [](Vm* vm) { g_bench_vm.store(vm); };
  hooks.stop_signal = [] { return g_bench_signal.load(); };
  hooks.error = [](const std::string& line) { fmt::print(stderr, "minivmm bench: {}\n", line); };
  if (!o_.quiet) {
    hooks.progress = [this](size_t i, size_t n, const PlannedRun& p, absl::Duration took) {
      PrintProgress(i, n, p, took);
    };
  }
  start_ = absl::Now();
  matrix_.Run(hooks);
  if (!matrix_.stop_why().empty()) {
    fmt::print(stderr, "minivmm bench: {} after {} of {} runs; writing what was measured\n",
               matrix_.stop_why(), matrix_.runs().size(), matrix_.plan().size());
  }

  std::vector<ConfigResult> results = matrix_.Aggregate();
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
    // Stopped early: only the tables whose both ends were measured; a
    // selection without optimized (--configurations) has only the second.
    if (group.front()->configuration != "naive") continue;
    if (optimized_it == group.end() && matrix_.Runs("optimized")) continue;
    const ConfigResult& naive = *group.front();
    if (optimized_it != group.end()) {
      const ConfigResult& optimized = **optimized_it;
      fmt::print("{}\n",
                 RenderBeforeAfter(fmt::format("{} (workload={}), backend={}{}: all naive -> all "
                                               "optimized; median of {} runs, {} only",
                                               naive.workload, naive.workload_spec, naive.backend,
                                               vcpus, optimized.runs, naive.scope),
                                   "before", "after", naive, optimized));
    }
    fmt::print("{}\n", RenderConfigurations(
                           fmt::format("{} (workload={}), backend={}{}: one op changed at a time, "
                                       "against all naive",
                                       naive.workload, naive.workload_spec, naive.backend, vcpus),
                           group));
  }
  matrix_.ComputeSeeds(results);
  fmt::print("{}", RenderSeeds(matrix_.seeds(), matrix_.exit_cost(), matrix_.TscKhz(), o_.repeat));
  // A failed run stops the bench: its status is the stop's, unless a file
  // could not be written (nothing of it is left).
  const int status = WriteOutputs(results);
  if (status == kExitVmmError || matrix_.stop_why().empty()) return status;
  return matrix_.stop_status();
}

}  // namespace

void AddBenchFlags(CLI::App& app, BenchOptions& o) {
  o.workloads = DefaultBenchWorkloads();
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
  AddGuestKernelFlags(app, o.kernel, o.guest_counters);
  app.add_option("--memory", o.memory, "Guest RAM per run, e.g. 64M")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--timeout", o.timeout_seconds, "Stop a run after this many seconds (0 = never)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  app.add_option("--cpus", o.cpus,
                 "vCPUs of every run (the workload runs on vCPU 0, the others idle)")
      ->check(CLI::Range(1u, static_cast<uint32_t>(MVMM_MAX_CPUS)))
      ->capture_default_str();
  app.add_option("--configurations", o.configurations,
                 "Comma-separated configurations to run (default: all), each compared with all "
                 "naive (and a xen+<op> with xen), which always run too: " +
                     BenchConfigurationNames());
  app.add_flag("--quiet,-q", o.quiet, "No progress lines");
  app.add_flag("--reprobe", o.reprobe,
               "Probe the host again instead of reusing its cached probe (docs/run-record.md)");
}

int BenchCommand(const BenchOptions& options) { return Bench(options).Run(); }

}  // namespace minivmm::cli
