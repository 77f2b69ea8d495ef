// What the whole-VM tests of the PC machines (pc_machine_test.cc,
// q35_machine_test.cc, kernel_exits_test.cc) share: the project's own
// Multiboot guests (tests/pc_guests) run on the PC machine, their key=value
// lines, and the host check every PC run makes.
#ifndef MINIVMM_TESTS_INTEGRATION_PC_TEST_UTIL_H_
#define MINIVMM_TESTS_INTEGRATION_PC_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "minivmm/machine.h"
#include "tests/common/pc_host.h"
#include "tests/integration/vm_test_util.h"
#include "vmm/kvm/kvm.h"
#include "vmm/machine/pc_host_check.h"

namespace minivmm::testing {

inline std::string PcGuest(const std::string& name) {
  return std::string(MINIVMM_PC_GUEST_DIR) + "/" + name + ".elf";
}

inline VmConfig PcConfig(const std::string& guest, const std::string& args, uint32_t cpus = 1) {
  VmConfig config = GuestConfig(PcGuest(guest), args, absl::Seconds(60), /*timer_hz=*/0,
                                /*analyse_waste=*/false, cpus);
  config.machine = MachineKind::kPc;
  return config;
}

// The guest's key=value lines (the first '=' splits); later lines win.
inline std::map<std::string, std::string> ConsoleValues(const std::string& console) {
  std::map<std::string, std::string> values;
  std::istringstream in(console);
  for (std::string line; std::getline(in, line);) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) values[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return values;
}

// A number the guest printed (`base` 16 for its 0x values); a missing or
// malformed one fails the test and reads 0.
inline uint64_t Number(const std::map<std::string, std::string>& values, const std::string& key,
                       int base = 10) {
  auto it = values.find(key);
  if (it == values.end() || it->second.empty()) {
    ADD_FAILURE() << "the guest did not print " << key;
    return 0;
  }
  size_t used = 0;
  uint64_t n = std::stoull(it->second, &used, base);
  EXPECT_EQ(used, it->second.size()) << key << "=" << it->second;
  return n;
}

// The guest finished its self-checks ("done", no "FAIL:") and wrote `code`
// to the debug-exit port.
inline void ExpectDoneWith(const GuestRun& run, uint32_t code) {
  EXPECT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
  EXPECT_EQ(run.result.exit_code, static_cast<int>((code << 1) | 1));
  EXPECT_EQ(run.console.find("FAIL:"), std::string::npos) << run.console;
  EXPECT_NE(run.console.find("\ndone\n"), std::string::npos) << run.console;
}

// A run of the PC machine, or nullopt where this host refuses the machine
// (tests/common/pc_host.h): the host check's refusal is asserted, as is
// Vm::Create's failing with it, and the test has nothing more to check.
inline std::optional<GuestRun> RunPc(const VmConfig& config) {
  absl::StatusOr<KvmSystem> kvm = KvmSystem::Open();
  if (kvm.ok()) {
    if (absl::Status check = CheckPcMachineRunsHere(*kvm); !check.ok()) {
      EXPECT_EQ(check.code(), absl::StatusCode::kFailedPrecondition) << check;
      EXPECT_TRUE(PcRefusedHere(std::string(check.message()))) << check;
      absl::StatusOr<std::unique_ptr<Vm>> vm = Vm::Create(config);
      EXPECT_FALSE(vm.ok());
      if (!vm.ok()) {
        EXPECT_TRUE(PcRefusedHere(std::string(vm.status().message()))) << vm.status();
      }
      return std::nullopt;
    }
  }
  return RunGuestWith(config);
}

}  // namespace minivmm::testing

#endif  // MINIVMM_TESTS_INTEGRATION_PC_TEST_UTIL_H_
