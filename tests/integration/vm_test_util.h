// Helpers for whole-VM tests: run a guest through the public API and read
// its result. Without /dev/kvm they fail (REQUIRE_KVM, tests/common/command.h).
#ifndef MINIVMM_TESTS_INTEGRATION_VM_TEST_UTIL_H_
#define MINIVMM_TESTS_INTEGRATION_VM_TEST_UTIL_H_

#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "minivmm/vm.h"
#include "minivmm_abi/boot.h"
#include "minivmm_abi/hypercall.h"
#include "tests/common/command.h"
#include "tests/common/fake_vm.h"

namespace minivmm::testing {

// Every hypercall of the ABI, number and name (MVMM_HYPERCALL_LIST).
struct HcName {
  uint32_t nr;
  const char* name;
};
inline constexpr HcName kAbiHypercalls[] = {
#define MVMM_TEST_HC_(nr, name) {nr, #name},
    MVMM_HYPERCALL_LIST(MVMM_TEST_HC_)
#undef MVMM_TEST_HC_
};

// All exits of one vCPU (or of the VM), over every exit reason.
inline uint64_t TotalExits(const ExitStats& s) {
  uint64_t total = 0;
  for (uint64_t n : s.by_reason) total += n;
  return total;
}
inline const CauseCount& CauseIn(const ExitStats& s, Cause c) {
  return s.causes[static_cast<int>(c)];
}

inline std::string TinyGuest(const std::string& name) {
  return std::string(MINIVMM_TINY_GUEST_DIR) + "/" + name + ".elf";
}
inline std::string BuiltinGuest() { return MINIVMM_GUEST_ELF; }

struct GuestRun {
  RunResult result;
  std::string console;
  std::map<std::string, std::string> reports;

  uint64_t Report(const std::string& key) const {
    auto it = reports.find(key);
    EXPECT_NE(it, reports.end()) << "the guest did not report " << key;
    return it == reports.end() ? ~0ull : std::stoull(it->second);
  }
  // A report that may be absent (a secondary CPU reports only the
  // hypercalls it made): absent is 0.
  uint64_t ReportOr0(const std::string& key) const {
    auto it = reports.find(key);
    return it == reports.end() ? 0 : std::stoull(it->second);
  }
  uint64_t HypercallOps(uint32_t nr) const { return result.stats.hc_ops[nr]; }
  uint64_t HypercallExits(uint32_t nr) const { return result.stats.hc_exits[nr]; }
  uint64_t Pio(const std::string& device) const {
    for (size_t i = 0; i < result.pio_devices.size(); ++i)
      if (result.pio_devices[i] == device) return result.stats.pio_by_device[i];
    ADD_FAILURE() << "no port device " << device;
    return 0;
  }
  uint64_t Mmio(const std::string& device) const {
    for (size_t i = 0; i < result.mmio_devices.size(); ++i)
      if (result.mmio_devices[i] == device) return result.stats.mmio_by_device[i];
    ADD_FAILURE() << "no MMIO device " << device;
    return 0;
  }
  uint64_t Register(const std::string& name) const {
    for (const auto& [n, v] : result.registers)
      if (n == name) return v;
    ADD_FAILURE() << "no register " << name;
    return 0;
  }
};

// What tells a host fault from a guest bug, on the test's output: the
// stopping vCPU's registers and each vCPU's last exits (StopDiagnosis; the
// debug presets keep 16 per vCPU, VmConfig::recent_exits).
inline void PrintStopDiagnosis(const RunResult& r) {
  std::fprintf(stderr, "the run stopped on a failure (%s: %s):\n",
               std::string(StopReasonName(r.reason)).c_str(), r.detail.c_str());
  for (const std::string& line : StopDiagnosis(r)) std::fprintf(stderr, "%s\n", line.c_str());
}

// Runs the VM `config` describes (its console recorded here) to its stop;
// on a failure (StoppedOnAFailure) prints the diagnosis, whether or not the
// test expected the failure.
inline GuestRun RunGuestWith(VmConfig config) {
  GuestRun run;
  RecordingConsole console;
  config.console = &console;
  absl::StatusOr<std::unique_ptr<Vm>> vm = Vm::Create(config);
  EXPECT_TRUE(vm.ok()) << vm.status();
  if (!vm.ok()) return run;
  absl::StatusOr<RunResult> result = (*vm)->Run();
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return run;
  run.result = *result;
  run.console = console.out;
  // The shutdown codes are the built-in machine's guests'; a tiny guest's
  // code 1, 3 or 4 prints it too, which does no harm. A PC guest's code is
  // the debug-exit status, which means what the guest says.
  if (StoppedOnAFailure(run.result, /*builtin_guest=*/config.machine == MachineKind::kBuiltin))
    PrintStopDiagnosis(run.result);
  for (const auto& [k, v] : result->reports.entries) run.reports[k] = v;
  return run;
}

inline VmConfig GuestConfig(const std::string& kernel, const std::string& cmdline,
                            absl::Duration timeout = absl::Seconds(60), uint32_t timer_hz = 0,
                            bool analyse_waste = false, uint32_t cpus = 1) {
  VmConfig config;
  config.kernel_path = kernel;
  config.cmdline = cmdline;
  config.timeout = timeout;
  config.timer_hz = timer_hz;
  config.analyse_waste = analyse_waste;
  config.cpus = cpus;
  return config;
}

inline GuestRun RunGuest(const std::string& kernel, const std::string& cmdline,
                         absl::Duration timeout = absl::Seconds(60), uint32_t timer_hz = 0,
                         bool analyse_waste = false, uint32_t cpus = 1) {
  return RunGuestWith(GuestConfig(kernel, cmdline, timeout, timer_hz, analyse_waste, cpus));
}

}  // namespace minivmm::testing

#endif  // MINIVMM_TESTS_INTEGRATION_VM_TEST_UTIL_H_
