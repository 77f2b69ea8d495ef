#include <fcntl.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/exit_table.h"
#include "cli/exit_timeline.h"
#include "cli/experiment.h"
#include "cli/file_digest.h"
#include "cli/guest_cmdline.h"
#include "cli/output_file.h"
#include "cli/probe_cache.h"
#include "cli/run_record.h"
#include "cli/sites_record.h"
#include "cli/trace_writer.h"
#include "fmt/format.h"
#include "minivmm/host_info.h"
#include "minivmm/vm.h"
#include "minivmm_abi/boot.h"

namespace minivmm::cli {
namespace {

// Streams the guest console to stdout, flushing per line so that output
// interleaves sensibly with the table on stderr.
// The guest's console on stdout, which a user asked for like any output
// file: its first write error is kept, and fails the command (Finish).
class StdoutConsole final : public ConsoleSink {
 public:
  void Write(std::string_view bytes) override {
    const bool ok = fwrite(bytes.data(), 1, bytes.size(), stdout) == bytes.size() &&
                    (bytes.find('\n') == std::string_view::npos || fflush(stdout) == 0);
    int none = 0;
    if (!ok) error_.compare_exchange_strong(none, errno);
  }
  // After the run: flushes, and gives the first write error's errno (0: none).
  int Finish() {
    int none = 0;
    if (fflush(stdout) != 0) error_.compare_exchange_strong(none, errno);
    return error_.load();
  }

 private:
  std::atomic<int> error_{0};
};

std::atomic<Vm*> g_running_vm{nullptr};
std::atomic<int> g_signal{0};

void OnStopSignal(int signo) {
  g_signal.store(signo);
  if (Vm* vm = g_running_vm.load()) vm->RequestStop();
}

// On a stop on a failure (StoppedOnAFailure): the stopping vCPU's registers
// and each vCPU's recent exits (docs/design.md "Recent exits"), then the last
// console lines.
void PrintCrashReport(const RunResult& result) {
  fmt::print(stderr, "minivmm: {}\n", result.detail);
  for (const std::string& line : StopDiagnosis(result)) fmt::print(stderr, "{}\n", line);
  fmt::print(stderr, "last console lines:\n");
  for (const std::string& line : result.console_tail) fmt::print(stderr, "  | {}\n", line);
}

// The VM the flags ask for.
VmConfig RunConfig(const RunOptions& o, ConsoleSink* console) {
  VmConfig config;
  config.machine = MachineNamed(o.machine).value_or(MachineKind::kBuiltin);
  config.kernel_path = o.kernel;
  if (o.kernel.empty() && !o.guest_counters)
    config.kernel_path = UncountedGuestKernelPath(DefaultGuestKernelPath());
  config.memory_bytes = o.memory;
  config.cmdline = GuestCommandLine(o);
  config.initrd_path = o.initrd;
  config.pit = o.pit;
  config.pc_testdev = o.pc_testdev;
  config.hyperv = o.hyperv;
  config.hyperv_testdev = o.hyperv_testdev;
  config.split_irqchip = o.split_irqchip;
  config.intel_iommu = o.intel_iommu;
  config.edu = o.edu;
  // Checked when the flags were parsed (AddRunFlags).
  config.cpu_features = ParseCpuFeatures(o.cpu_features).value_or(std::vector<CpuFeatureChange>{});
  config.cpu_vendor = o.cpu_vendor;
  config.cpu_enforce = o.cpu_enforce;
  config.kernel_exits = o.kernel_exits;
  // The trace holds each exit KVM saw (docs/trace.md).
  config.kernel_exit_events = o.kernel_exits && !o.trace_path.empty();
  config.timer_hz = o.timer_hz;
  config.cpus = o.cpus;
  config.analyse_waste = o.wasted;
  config.record_sites = o.sites || !o.stacks_path.empty();
  if (o.recent_exits >= 0) config.recent_exits = static_cast<uint32_t>(o.recent_exits);
  if (o.timeout_seconds > 0) config.timeout = absl::Seconds(o.timeout_seconds);
  config.console = console;
  return config;
}

// Usage errors before anything runs: a command line the built-in guest
// would refuse (another --kernel checks its own), an output file that
// cannot be created. 0, with the outputs asked for open; else the status.
int CheckBeforeRunning(const RunOptions& o, const VmConfig& config,
                       std::unique_ptr<OutputFile>& json_out,
                       std::unique_ptr<OutputFile>& trace_out,
                       std::unique_ptr<OutputFile>& stacks_out) {
  // The built-in guest's words mean nothing to another machine's guest.
  if (config.machine != MachineKind::kBuiltin) {
    for (auto [value, flag] : {std::pair{&o.backend, "--backend"}, std::pair{&o.pvops, "--pvops"},
                               std::pair{&o.workload, "--workload"}}) {
      if (value->empty()) continue;
      fmt::print(stderr,
                 "minivmm: {} is the built-in guest's; the {} machine's guest takes --cmdline\n",
                 flag, o.machine);
      return kExitUsage;
    }
  }
  if (o.kernel.empty()) {
    if (absl::Status s = CheckGuestCommandLine(config.cmdline); !s.ok()) {
      fmt::print(stderr, "minivmm: {}\n", std::string(s.message()));
      return kExitUsage;
    }
  }
  for (auto [path, what, out] : {std::tuple{&o.json_path, "run record", &json_out},
                                 std::tuple{&o.trace_path, "trace", &trace_out},
                                 std::tuple{&o.stacks_path, "folded stacks", &stacks_out}}) {
    if (path->empty()) continue;
    absl::StatusOr<std::unique_ptr<OutputFile>> f = OutputFile::Create(*path, what);
    if (!f.ok()) {
      fmt::print(stderr, "minivmm: {}\n", std::string(f.status().message()));
      return kExitUsage;
    }
    *out = *std::move(f);
  }
  return 0;
}

// Closes the trace, if there is one, whatever stopped the run (timeout,
// signal, fault); a write error is printed here and fails the command once
// the rest is reported.
absl::Status CommitTrace(TraceWriter* trace, const absl::StatusOr<RunResult>& result) {
  if (trace == nullptr) return absl::OkStatus();
  absl::Status s = result.ok()
                       ? trace->Commit(std::string(StopReasonName(result->reason)), result->detail)
                       : trace->Commit("VMM error", std::string(result.status().message()));
  if (!s.ok()) fmt::print(stderr, "minivmm: {}\n", std::string(s.message()));
  return s;
}

// The run record. The provenance (host description, host probe, the guest
// image's digest) is only written to the --json file; the exit table does
// not show it, so a run without --json does not gather it. The host probe
// is a second, short guest run.
nlohmann::json RunRecord(const RunOptions& o, const VmConfig& config, const RunResult& result,
                         bool with_provenance, const std::optional<ExitTimeline>& timeline) {
  std::optional<HostInfo> host;
  std::string kernel_digest;
  if (with_provenance) {
    if (absl::StatusOr<HostInfo> probed = ProbeHost(config.kvm_device); probed.ok()) {
      host = *std::move(probed);
      CachedProbeBehaviourInto(*host, config.kvm_device, o.reprobe);
    }
    kernel_digest = FileSha256(config.kernel_path);
  }
  nlohmann::json record = MakeRunRecord(config, result, host ? &*host : nullptr, kernel_digest);
  AddSites(record, result, config.kernel_path);
  if (timeline) record["timeline"] = timeline->Record();
  return record;
}

// What the run says on stderr: the VMM's notes, how each vCPU stopped (with
// --quiet, only when the guest did not shut down by itself: a QEMU-style
// runner such as kvm-unit-tests' reads any other stderr line as a failure),
// the registers of a crash, and (unless --quiet) the exit table.
void PrintRun(const RunOptions& o, const RunResult& result, const nlohmann::json& record) {
  for (const std::string& note : result.notes) fmt::print(stderr, "minivmm: {}\n", note);
  if (result.vcpu_stops.size() > 1 && (!o.quiet || result.reason != StopReason::kGuestShutdown))
    fmt::print(stderr, "minivmm: {}\n", VcpuStopLine(record));
  if (StoppedOnAFailure(result, /*builtin_guest=*/o.kernel.empty())) PrintCrashReport(result);
  if (!o.quiet) fmt::print(stderr, "{}", RenderExitTable(record));
}

}  // namespace

void AddGuestKernelFlags(CLI::App& app, std::string& kernel, bool& guest_counters) {
  CLI::Option* kernel_option =
      app.add_option("--kernel", kernel,
                     fmt::format("Guest ELF (default: the built-in guest, {})",
                                 guest_counters ? "counted" : "uncounted"));
  app.add_option("--guest-counters", guest_counters,
                 "on: the built-in guest that counts its own events and hypercalls (kernel.*); "
                 "off: its uncounted build, whose timed paths run none of that bookkeeping")
      ->check(CLI::IsMember({"on", "off"}))
      ->default_str(guest_counters ? "on" : "off")
      ->excludes(kernel_option);
}

void AddRunFlags(CLI::App& app, RunOptions& o) {
  std::vector<std::string> machines;
  std::string machine_help = "The machine (docs/machines.md):";
  for (const MachineInfo& m : kMachines) {
    machines.emplace_back(m.name);
    machine_help += fmt::format(" {}: {};", m.name, m.summary);
  }
  machine_help.pop_back();
  app.add_option("--machine", o.machine, machine_help)
      ->check(CLI::IsMember(machines))
      ->capture_default_str();
  app.add_option("--initrd", o.initrd,
                 "pc: a file loaded as the Multiboot module, as QEMU's -initrd");
  app.add_flag("--pit", o.pit, "pc: KVM's in-kernel PIT on ports 0x40-0x43 (IRQ 0)");
  app.add_flag("--hyperv", o.hyperv,
               "pc: Hyper-V's enlightenments as KVM offers them (QEMU's -cpu host,hv_passthrough)");
  app.add_flag("--hyperv-testdev", o.hyperv_testdev,
               "pc, with --hyperv: QEMU's hyperv-testdev (port 0x3000: SINT routes, message and "
               "event connections)");
  app.add_flag("--split-irqchip", o.split_irqchip,
               "q35: KVM's split irqchip (QEMU's kernel-irqchip=split): the IOAPIC minivmm's, no "
               "PIC or PIT");
  app.add_flag("--intel-iommu", o.intel_iommu,
               "q35, with --split-irqchip: an Intel IOMMU (VT-d: DMA and interrupt remapping, "
               "queued invalidation) at 0xFED90000, as QEMU's -device intel-iommu,intremap=on");
  app.add_flag("--edu", o.edu, "q35: QEMU's edu PCI device (DMA, INTx and MSI)");
  app.add_flag("--pc-testdev", o.pc_testdev,
               "pc: QEMU's pc-testdev (ports 0xe0-0xeb, IRQ lines at 0x2000, MMIO at 0xff000000)");
  std::string feature_help =
      "CPUID bits to give the guest (+NAME; where KVM or the machine cannot, left clear with a "
      "warning, or refused with --cpu-enforce) or take away (-NAME), comma-separated:";
  for (const CpuFeature& f : kCpuFeatures) feature_help += fmt::format(" {},", f.name);
  feature_help.pop_back();
  app.add_option("--cpu-features", o.cpu_features, feature_help)
      ->check([](const std::string& value) {
        absl::StatusOr<std::vector<CpuFeatureChange>> changes = ParseCpuFeatures(value);
        return changes.ok() ? std::string() : std::string(changes.status().message());
      });
  app.add_flag(
      "--cpu-enforce", o.cpu_enforce,
      "Refuse the VM where a --cpu-features +NAME cannot be given (QEMU's -cpu ...,enforce)");
  app.add_option("--cpu-vendor", o.cpu_vendor,
                 "CPUID's vendor string, 12 characters (GenuineIntel, AuthenticAMD)")
      ->check([](const std::string& value) {
        absl::Status vendor = CheckCpuVendor(value);
        return vendor.ok() ? std::string() : std::string(vendor.message());
      });
  app.add_flag("--kernel-exits", o.kernel_exits,
               "Every exit of every vCPU as KVM's kvm:kvm_exit tracepoint reports it, by "
               "reason, detail and phase, those KVM handled told from those that reached "
               "minivmm (needs tracefs and the right to trace); with --sites, each exit's "
               "guest call chain, walked at the exit by a BPF program (kvm_amd)");
  AddGuestKernelFlags(app, o.kernel, o.guest_counters);
  app.add_option("--memory", o.memory, "Guest RAM, e.g. 64M (2 MiB multiples, 8M to 3G)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--backend", o.backend, "Guest backend")->check(CLI::IsMember({"pv", "native"}));
  app.add_option("--pvops", o.pvops, "naive | optimized | op:variant,...");
  app.add_option("--workload", o.workload, "Guest workload NAME[,k=v...]");
  app.add_option("--cmdline", o.cmdline, "Extra guest command-line words");
  app.add_option("--timer-hz", o.timer_hz,
                 "vCPU 0's periodic timer interrupts per second (0 = off)")
      ->check(CLI::Range(0, 10000));
  app.add_option("--cpus", o.cpus,
                 "vCPUs, each on a host thread of its own; the workload runs on vCPU 0")
      ->check(CLI::Range(1u, static_cast<uint32_t>(MVMM_MAX_CPUS)));
  app.add_option("--timeout", o.timeout_seconds, "Stop after this many seconds (0 = never)")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--json", o.json_path, "Write the run record (JSON) here");
  app.add_option("--trace", o.trace_path, "Write every exit here (see --trace-format)");
  app.add_option("--trace-format", o.trace_format,
                 "jsonl: one JSON line per exit; perfetto: a timeline for ui.perfetto.dev")
      ->check(CLI::IsMember({"jsonl", "perfetto"}));
  app.add_flag("--quiet,-q", o.quiet, "Do not print the exit table");
  app.add_flag("--reprobe", o.reprobe,
               "With --json: probe the host again instead of reusing its cached probe "
               "(docs/run-record.md)");
  app.add_flag("--wasted", o.wasted,
               "Say which exits changed nothing (docs/wasted-exits.md): a wasted column in the "
               "exit table and the record, a mark in the trace");
  app.add_flag("--sites", o.sites,
               "Say where exits come from (docs/sites.md): the guest functions and call chains, "
               "in the exit table and the record");
  app.add_option("--recent-exits", o.recent_exits,
                 fmt::format("Keep each vCPU's last N exits, shown when the run fails and in the "
                             "record (docs/design.md \"Recent exits\"; default {} in a debug "
                             "build, 0 in a release build)",
                             kDefaultRecentExits))
      ->check(CLI::Range(int64_t{0}, int64_t{kMaxRecentExits}));
  app.add_option("--stacks", o.stacks_path,
                 "Write the exits' folded stacks here (flame graphs, speedscope); implies --sites");
}

std::string GuestCommandLine(const RunOptions& o) {
  return ComposeGuestCommandLine(o.backend, o.pvops, o.workload, o.cmdline);
}

int RunCommand(const RunOptions& o) {
  // Handlers first, so that a signal during set-up still ends the run
  // cleanly (RequestStop is called as soon as there is a VM).
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  StdoutConsole console;
  VmConfig config = RunConfig(o, &console);
  std::unique_ptr<OutputFile> json_out, trace_out, stacks_out;
  if (int status = CheckBeforeRunning(o, config, json_out, trace_out, stacks_out); status != 0)
    return status;

  // The stop signals wait while the VM is made: one that came during a
  // system call there (KVM_CREATE_VM returns EINTR) would fail it as a VMM
  // error (125). Taken once the VM exists, it stops the VM before its
  // first instruction (130, 143).
  sigset_t stop_signals, previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &previous);
  absl::StatusOr<std::unique_ptr<Vm>> vm = Vm::Create(config);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (!vm.ok()) {
    fmt::print(stderr, "minivmm: {}\n", std::string(vm.status().message()));
    return kExitVmmError;
  }
  if (config.kernel_path.empty()) config.kernel_path = DefaultGuestKernelPath();
  std::unique_ptr<TraceWriter> trace;
  if (trace_out != nullptr) {
    trace = std::make_unique<TraceWriter>(
        std::move(trace_out),
        o.trace_format == "perfetto" ? TraceFormat::kPerfetto : TraceFormat::kJsonl,
        "minivmm: " + (o.workload.empty() ? std::string("default workload") : o.workload),
        config.record_sites ? config.kernel_path : std::string());
  }
  // The record's exits over time: with sites (each exit's cause) and a record.
  std::optional<ExitTimeline> timeline;
  if (json_out != nullptr && config.record_sites) timeline.emplace(ExitClockNs());
  if (trace != nullptr || timeline) {
    (*vm)->SetExitObserver([&trace, &timeline](const ExitEvent& e) {
      if (trace != nullptr) trace->Write(e);
      if (timeline) timeline->Add(e);
    });
  }

  g_running_vm.store(vm->get());
  if (g_signal.load() != 0) (*vm)->RequestStop();
  absl::StatusOr<RunResult> result = (*vm)->Run();
  g_running_vm.store(nullptr);
  const int console_error = console.Finish();
  if (console_error != 0) {
    fmt::print(stderr, "minivmm: cannot write the guest console to standard output: {}\n",
               strerror(console_error));
  }
  if (trace != nullptr && result.ok()) trace->WriteKernelExits(*result);
  const absl::Status trace_status = CommitTrace(trace.get(), result);
  if (!result.ok()) {
    fmt::print(stderr, "minivmm: {}\n", std::string(result.status().message()));
    return kExitVmmError;
  }

  const nlohmann::json record =
      RunRecord(o, config, *result, /*with_provenance=*/json_out != nullptr, timeline);
  PrintRun(o, *result, record);
  if (stacks_out != nullptr) stacks_out->Write(FoldedStacks(record));
  if (json_out != nullptr) json_out->Write(record.dump(2) + "\n");
  for (OutputFile* out : {stacks_out.get(), json_out.get()}) {
    if (out == nullptr) continue;
    if (absl::Status s = out->Commit(); !s.ok()) {
      fmt::print(stderr, "minivmm: {}\n", std::string(s.message()));
      return kExitVmmError;
    }
  }
  if (!trace_status.ok() || console_error != 0) return kExitVmmError;
  return ExitStatusFor(*result, g_signal.load());
}

namespace {

// "emulated (evidence)", "not delivered (evidence)", "not measured (why)".
std::string BehaviourLine(const ProbedBehaviour& b, const char* yes, const char* no) {
  return fmt::format("{} ({})", !b.value ? "not measured" : *b.value ? yes : no, b.evidence);
}

}  // namespace

void AddInfoFlags(CLI::App& app, InfoOptions& o) {
  app.add_flag("--json", o.json, "Print the host description as JSON (provenance.host's form)");
  app.add_flag("--cpu-features", o.cpu_features,
               "Print the CPUID bits run --cpu-features can change, one per line (no KVM needed)");
  app.add_flag("--limits", o.limits,
               "Print the limits of run --memory (MiB) and --cpus, one `name value` per line (no "
               "KVM needed)");
}

int InfoCommand(const InfoOptions& o) {
  if (o.limits) {
    fmt::print("memory_min_mib {}\nmemory_max_mib {}\ncpus_max {}\n", MVMM_MEMORY_MIN >> 20,
               MVMM_MEMORY_MAX >> 20, MVMM_MAX_CPUS);
    return 0;
  }
  if (o.cpu_features) {
    for (const CpuFeature& f : kCpuFeatures) {
      const std::string where =
          fmt::format("CPUID.{:#x}.{}:{}[{}]", f.leaf, f.subleaf, CpuidRegisterName(f.reg), f.bit);
      fmt::print("{:<14} {:<26} {}\n", f.name, where, f.summary);
    }
    return 0;
  }
  absl::StatusOr<HostInfo> host = ProbeHost();
  if (!host.ok()) {
    fmt::print(stderr, "minivmm: {}\n", std::string(host.status().message()));
    return kExitVmmError;
  }
  ProbeBehaviourInto(*host);
  const HostBehaviour& b = *host->behaviour;
  if (o.json) {
    fmt::print("{}\n", HostRecord(*host).dump(2));
    return 0;
  }
  fmt::print("KVM API version      {}\n", host->kvm_api_version);
  fmt::print("KVM module           {}\n", host->kvm_module);
  // Its parameters, a line per module (all of them: `--json`'s kvm_parameters).
  std::map<std::string, std::vector<std::string>> by_module;
  for (const auto& [name, value] : host->kvm_parameters) {
    const size_t dot = name.find('.');
    by_module[name.substr(0, dot)].push_back(name.substr(dot + 1) + "=" + value);
  }
  for (const auto& [module, params] : by_module) {
    // Wrapped at 100 columns, continued under the first value.
    std::string line = fmt::format("{:<20}", module + " parameters");
    size_t width = line.size();
    for (const std::string& p : params) {
      if (width > 21 && width + 1 + p.size() > 100) {
        line += "\n" + std::string(20, ' ');
        width = 20;
      }
      line += " " + p;
      width += 1 + p.size();
    }
    fmt::print("{}\n", line);
  }
  fmt::print("guest ring 0         {}\n", BehaviourLine(b.ring0_emulated, "emulated", "native"));
  fmt::print("ring-3 #NM           {}\n", BehaviourLine(b.ring3_nm, "delivered", "not delivered"));
  fmt::print("vmcall               {}\n", BehaviourLine(b.vmcall_in_kernel, "handled in the kernel",
                                                        "not handled in the kernel"));
  fmt::print("host probe           {:.0f} ms ({} guest run{} of workload=hostprobe)\n",
             absl::ToDoubleMilliseconds(b.elapsed), b.runs, b.runs == 1 ? "" : "s");
  fmt::print("host kernel          {}\n", host->host_kernel);
  fmt::print("CPU                  {}\n", host->cpu_model);
  fmt::print("capabilities:\n");
  for (const HostCapability& cap : host->capabilities) {
    fmt::print("  {:<26} {:<8} {}\n", cap.name,
               cap.value != 0 ? fmt::format("yes ({})", cap.value) : "no",
               cap.required ? "required" : "optional");
  }
  fmt::print("default guest        {}\n", DefaultGuestKernelPath());
  return 0;
}

}  // namespace minivmm::cli
