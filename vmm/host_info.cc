#include "minivmm/host_info.h"

#include <sys/utsname.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "minivmm/vm.h"
#include "minivmm_abi/hypercall.h"
#include "vmm/core/status_macros.h"
#include "vmm/kvm/kvm.h"

namespace minivmm {
namespace {

std::string KvmModule() {
  // The vendor module that backs /dev/kvm. kvm_pvm is a software backend
  // whose guest ring 0 runs in KVM's instruction emulator.
  for (const char* module : {"kvm_pvm", "kvm_intel", "kvm_amd"}) {
    std::error_code ec;
    if (std::filesystem::exists(std::string("/sys/module/") + module, ec)) return module;
  }
  return "unknown";
}

// "module.name" -> value for every readable parameter of `module` (a file
// that cannot be read, mode 0200, is left out).
void ReadModuleParameters(const std::string& module, std::map<std::string, std::string>& out) {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::path("/sys/module") / module / "parameters";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::ifstream in(entry.path());
    std::string value;
    if (!in || !std::getline(in, value)) continue;
    out[absl::StrCat(module, ".", entry.path().filename().string())] =
        std::string(absl::StripTrailingAsciiWhitespace(value));
  }
}

std::string CpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (absl::StartsWith(line, "model name")) {
      auto colon = line.find(':');
      if (colon != std::string::npos)
        return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    }
  }
  return "unknown";
}

// The probe (guest/probes/hostprobe.cc). The guest reports
// hostprobe.vmcall=start right before its vmcall; where vmcall never
// returns, the run ends by its time limit, and the time from that report to
// the end of the run is how long the vCPU was left in vmcall. The first
// run's limit covers boot (~50 ms where ring 0 is emulated) plus the wait; a
// second, longer run is made only when the first stopped before the guest
// had waited kMinVmcallWait in vmcall (a busy machine). Where vmcall did not
// return, the host's instruction count of that run includes however KVM
// spent the wait (kvm_pvm re-emulates the vmcall), so ring 0 is then judged
// on one more run that skips the vmcall (vmcall=0) and shuts down.
constexpr uint64_t kProbeMemory = 16ull << 20;
constexpr const char* kProbeCmdline = "backend=pv pvops=optimized workload=hostprobe";
constexpr const char* kProbeNoVmcallCmdline =
    "backend=pv pvops=optimized workload=hostprobe,vmcall=0";
constexpr absl::Duration kMinVmcallWait = absl::Milliseconds(250);
constexpr absl::Duration kVmcallRunLimits[] = {absl::Milliseconds(400), absl::Seconds(3)};
constexpr absl::Duration kNoVmcallRunLimit = absl::Seconds(3);
constexpr int64_t kKvmEnosys = -1000;  // KVM's -KVM_ENOSYS for an unknown hypercall

// What one probe run showed.
struct ProbeRun {
  RunResult result;
  std::map<std::string, std::string> reports;
  std::string stop;             // "timeout: ..." for the evidence
  bool reached_vmcall = false;  // hostprobe.vmcall=start arrived
  absl::Duration vmcall_wait;   // from that report to the end of the run
};

absl::StatusOr<ProbeRun> RunProbeGuest(const std::string& guest_elf, const std::string& kvm_device,
                                       const char* cmdline, absl::Duration limit) {
  VmConfig config;
  config.kernel_path = guest_elf;
  config.memory_bytes = kProbeMemory;
  config.cmdline = cmdline;
  config.timeout = limit;
  config.kvm_device = kvm_device;
  ASSIGN_OR_RETURN(std::unique_ptr<Vm> vm, Vm::Create(config));
  // The time of the last report hypercall: for a run that timed out in
  // vmcall, the start marker's (its report is the guest's last exit).
  absl::Time last_report = absl::InfinitePast();
  vm->SetExitObserver([&last_report](const ExitEvent& e) {
    if (e.hypercall == MVMM_HC_report) last_report = absl::Now();
  });
  ProbeRun run;
  ASSIGN_OR_RETURN(run.result, vm->Run());
  absl::Time end = absl::Now();
  vm.reset();  // every fd and mapping of the probe VM goes here, whatever happened
  for (const auto& [key, value] : run.result.reports.entries) run.reports[key] = value;
  run.stop = absl::StrCat(std::string(StopReasonName(run.result.reason)), ": ", run.result.detail);
  auto marker = run.reports.find("hostprobe.vmcall");
  run.reached_vmcall = marker != run.reports.end() && marker->second == "start";
  if (run.reached_vmcall && last_report != absl::InfinitePast())
    run.vmcall_wait = end - last_report;
  return run;
}

bool Refused(const ProbeRun& run) {
  return run.result.reason == StopReason::kGuestShutdown && run.result.exit_code == 2 &&
         run.reports.count("hostprobe.loop_insns") == 0;
}

std::optional<int64_t> ReportNumber(const ProbeRun& run, const std::string& key) {
  auto it = run.reports.find(key);
  int64_t v = 0;
  if (it == run.reports.end() || !absl::SimpleAtoi(it->second, &v)) return std::nullopt;
  return v;
}

std::string Ms(absl::Duration d) {
  return absl::StrFormat("%.0f ms", absl::ToDoubleMilliseconds(d));
}

// Ring-3 #NM: the guest's boot probe, repeated by hostprobe (a run that
// ends in vmcall never sends kernel.ring3_nm).
std::optional<bool> Ring3Nm(const ProbeRun& run) {
  std::optional<int64_t> nm = ReportNumber(run, "hostprobe.ring3_nm");
  if (!nm) nm = ReportNumber(run, "kernel.ring3_nm");
  if (!nm) return std::nullopt;
  return *nm != 0;
}

void JudgeRing3Nm(const ProbeRun& run, HostBehaviour& b) {
  b.ring3_nm.value = Ring3Nm(run);
  if (!b.ring3_nm.value) {
    b.ring3_nm.evidence = "the guest did not report its boot probe (" + run.stop + ")";
  } else {
    b.ring3_nm.evidence =
        *b.ring3_nm.value ? "a ring-3 SSE instruction with CR0.TS=1 raised #NM in the guest"
                          : "a ring-3 SSE instruction with CR0.TS=1 ran without #NM in the guest";
  }
}

// Ring 0: the host's count of emulated instructions against the loop.
void JudgeRing0(const ProbeRun& run, HostBehaviour& b) {
  b.loop_insns = static_cast<uint64_t>(ReportNumber(run, "hostprobe.loop_insns").value_or(0));
  b.insn_emulation.reset();
  for (const HostCounter& c : run.result.host_counters)
    if (c.name == "insn_emulation") b.insn_emulation = c.delta;
  if (b.loop_insns == 0) {
    b.ring0_emulated.evidence = "the guest did not run its ring-0 loop (" + run.stop + ")";
  } else if (!b.insn_emulation) {
    b.ring0_emulated.evidence = "this host's KVM has no insn_emulation counter (KVM_GET_STATS_FD)";
  } else {
    b.ring0_emulated.value = *b.insn_emulation >= b.loop_insns;
    b.ring0_emulated.evidence = absl::StrFormat(
        "KVM's instruction emulator ran %u instructions in a run with a %u-instruction ring-0 "
        "loop",
        *b.insn_emulation, b.loop_insns);
  }
}

void JudgeVmcall(const ProbeRun& run, HostBehaviour& b) {
  const RunResult& r = run.result;
  b.vmcall_rax = ReportNumber(run, "hostprobe.vmcall_rax");
  // Only when vmcall did not return was the marker the guest's last report.
  b.vmcall_wait = b.vmcall_rax ? absl::ZeroDuration() : run.vmcall_wait;
  if (b.vmcall_rax) {
    b.vmcall_in_kernel.value = true;
    b.vmcall_in_kernel.evidence =
        absl::StrCat("vmcall returned RAX = ", *b.vmcall_rax,
                     *b.vmcall_rax == kKvmEnosys ? ", -KVM_ENOSYS" : ", not -KVM_ENOSYS");
  } else if (!run.reached_vmcall) {
    b.vmcall_in_kernel.evidence = "the guest did not reach vmcall (" + run.stop + ")";
  } else if (r.reason == StopReason::kTimeout && run.vmcall_wait >= kMinVmcallWait) {
    b.vmcall_in_kernel.value = false;
    b.vmcall_in_kernel.evidence = "the vCPU spins on vmcall: no return in " + Ms(run.vmcall_wait);
  } else if (r.reason == StopReason::kTimeout) {
    b.vmcall_in_kernel.evidence =
        "the run's time limit came only " + Ms(run.vmcall_wait) + " after vmcall";
  } else if (r.reason == StopReason::kGuestShutdown && r.exit_code == 3) {
    b.vmcall_in_kernel.value = false;
    b.vmcall_in_kernel.evidence = "vmcall raised an exception in the guest";
  } else {
    b.vmcall_in_kernel.evidence = "vmcall did not return (" + run.stop + ")";
  }
}

}  // namespace

absl::StatusOr<HostBehaviour> ProbeHostBehaviour(const std::string& guest_elf,
                                                 const std::string& kvm_device) {
  absl::Time start = absl::Now();
  HostBehaviour b;
  std::optional<ProbeRun> run;
  for (absl::Duration limit : kVmcallRunLimits) {
    ASSIGN_OR_RETURN(run, RunProbeGuest(guest_elf, kvm_device, kProbeCmdline, limit));
    ++b.runs;
    // Inconclusive only when the time limit cut the guest short before it
    // had waited long enough in vmcall (or before it got there).
    bool cut_short = run->result.reason == StopReason::kTimeout &&
                     (!run->reached_vmcall || run->vmcall_wait < kMinVmcallWait);
    if (!cut_short) break;
  }
  if (Refused(*run)) {
    std::string why = "the guest refused workload=hostprobe (command-line error, code 2)";
    b.ring0_emulated.evidence = b.ring3_nm.evidence = b.vmcall_in_kernel.evidence = why;
    b.elapsed = absl::Now() - start;
    return b;
  }
  JudgeRing3Nm(*run, b);
  JudgeVmcall(*run, b);
  JudgeRing0(*run, b);
  if (run->reached_vmcall && !b.vmcall_rax) {
    // The wait in vmcall counted too: judge ring 0 on a run without it.
    ASSIGN_OR_RETURN(ProbeRun plain, RunProbeGuest(guest_elf, kvm_device, kProbeNoVmcallCmdline,
                                                   kNoVmcallRunLimit));
    ++b.runs;
    b.ring0_emulated = {};
    JudgeRing0(plain, b);
    // A second, independent observation of ring-3 #NM: they must agree.
    std::optional<bool> nm = Ring3Nm(plain);
    if (nm && b.ring3_nm.value && *nm != *b.ring3_nm.value) {
      b.ring3_nm.value.reset();
      b.ring3_nm.evidence = "two probe runs disagree about ring-3 #NM";
    }
  }
  b.elapsed = absl::Now() - start;
  return b;
}

absl::StatusOr<HostInfo> ProbeHost(const std::string& kvm_device) {
  ASSIGN_OR_RETURN(KvmSystem kvm, KvmSystem::Open(kvm_device));
  HostInfo info;
  info.kvm_api_version = kvm.api_version();
  for (const KvmCapability& cap : kvm.Capabilities())
    info.capabilities.push_back({cap.name, cap.value, cap.required});
  info.kvm_module = KvmModule();
  ReadModuleParameters("kvm", info.kvm_parameters);
  if (info.kvm_module != "unknown") ReadModuleParameters(info.kvm_module, info.kvm_parameters);
  utsname u{};
  if (uname(&u) == 0) info.host_kernel = absl::StrCat(u.sysname, " ", u.release, " ", u.machine);
  info.cpu_model = CpuModel();
  return info;
}

}  // namespace minivmm
