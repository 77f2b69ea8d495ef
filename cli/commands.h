// The CLI's subcommands. Each returns the process exit status.
#ifndef MINIVMM_CLI_COMMANDS_H_
#define MINIVMM_CLI_COMMANDS_H_

#include <cstdint>
#include <string>

#include "cli/exit_codes.h"

// CLI11 (some 6 s of compile time) only where the flags are added.
namespace CLI {
class App;
}  // namespace CLI

namespace minivmm::cli {

struct RunOptions {
  std::string machine = "builtin";  // --machine (minivmm/machine.h)
  std::string initrd;               // --initrd: the pc machine's Multiboot module
  bool pit = false;                 // --pit: the pc machine's in-kernel PIT
  bool pc_testdev = false;          // --pc-testdev
  bool hyperv = false;              // --hyperv
  bool hyperv_testdev = false;      // --hyperv-testdev
  bool split_irqchip = false;       // --split-irqchip
  bool intel_iommu = false;         // --intel-iommu
  bool edu = false;                 // --edu
  std::string cpu_features;        // --cpu-features "+x2apic,-pcid" (minivmm/cpu_features.h)
  std::string cpu_vendor;          // --cpu-vendor
  bool cpu_enforce = false;        // --cpu-enforce
  bool kernel_exits = false;       // --kernel-exits: kvm:kvm_exit per vCPU
  std::string kernel;
  bool guest_counters = true;  // --guest-counters on|off: the built-in guest's counted kernel
  uint64_t memory = 64ull << 20;
  std::string backend;
  std::string pvops;
  std::string workload;
  std::string cmdline;
  uint32_t timer_hz = 0;
  uint32_t cpus = 1;
  double timeout_seconds = 0;
  std::string json_path;
  std::string trace_path;
  std::string trace_format = "jsonl";  // jsonl | perfetto (docs/trace.md)
  bool quiet = false;
  bool wasted = false;
  bool reprobe = false;     // measure the host again, not from the probe cache
  bool sites = false;       // --sites (docs/sites.md)
  std::string stacks_path;  // --stacks FILE: folded stacks (implies --sites)
  int64_t recent_exits = -1;  // --recent-exits N; -1: the build's default (VmConfig)
};

void AddRunFlags(CLI::App& app, RunOptions& options);
// --kernel and --guest-counters on|off (which of the built-in guest's two
// kernels, guest/README.md "The uncounted kernel"; with --kernel a usage
// error), for run and bench: `guest_counters` keeps its default.
void AddGuestKernelFlags(CLI::App& app, std::string& kernel, bool& guest_counters);
// The guest command line that the flags add up to (docs/design.md "Guest command line").
std::string GuestCommandLine(const RunOptions& options);
int RunCommand(const RunOptions& options);

// minivmm trace IN.jsonl -o OUT.json: a saved jsonl trace in the perfetto
// format (cli/trace_writer.cc, docs/trace.md).
struct TraceOptions {
  std::string input_path;
  std::string output_path;
};
void AddTraceFlags(CLI::App& app, TraceOptions& options);
int TraceCommand(const TraceOptions& options);

// minivmm info: the host's KVM, its capabilities and the host probe's answers.
struct InfoOptions {
  bool json = false;
  bool cpu_features = false;  // --cpu-features: the list, no KVM needed
  bool limits = false;        // --limits: the VM's size limits, no KVM needed
};
void AddInfoFlags(CLI::App& app, InfoOptions& options);
int InfoCommand(const InfoOptions& options);

// minivmm bench (cli/bench_command.cc, docs/run-record.md).
struct BenchOptions {
  std::string workloads;  // AddBenchFlags: the guest's list's bench items (DefaultBenchWorkloads)
  std::string backend = "both";  // pv, native, both
  int repeat = 3;
  std::string json_path;
  std::string csv_path;
  std::string plot_path;
  std::string kernel;
  uint64_t memory = 64ull << 20;
  double timeout_seconds = 120;
  uint32_t cpus = 1;  // vCPUs of every run
  bool quiet = false;
  bool reprobe = false;         // measure the host again, not from the probe cache
  bool guest_counters = false;  // --guest-counters: the counted built-in kernel
  std::string command_line;     // for provenance
  std::string configurations;   // --configurations: "" for all (SelectBenchConfigurations)
};
inline constexpr int kBenchRunFailed = 1;   // a run failed or a guest self-check failed
inline constexpr int kBenchPlotFailed = 3;  // the --plot figure could not be drawn
void AddBenchFlags(CLI::App& app, BenchOptions& options);
int BenchCommand(const BenchOptions& options);

// minivmm compare (cli/compare_command.cc): exit statuses as diff(1).
struct CompareOptions {
  std::string a_path;
  std::string b_path;
  bool fail_on_regression = false;
  double time_threshold_pct = 0;  // 0: timings never count as regressions
};
void AddCompareFlags(CLI::App& app, CompareOptions& options);
int CompareCommand(const CompareOptions& options);

// minivmm report (cli/report_command.cc).
struct ReportOptions {
  std::string input_path;
  std::string output_path;
};
void AddReportFlags(CLI::App& app, ReportOptions& options);
int ReportCommand(const ReportOptions& options);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_COMMANDS_H_
