// --kernel-exits (VmConfig::kernel_exits, include/minivmm/kernel_exits.h):
// every exit of the run as KVM's kvm:kvm_exit tracepoint reports it, checked
// exactly against KVM's own `exits` statistic and, on pc_exits, against the
// guest's N CPUIDs, N MSR reads and N HLTs at the addresses it prints.
#include <cstdint>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "minivmm/machine.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
namespace {

std::map<std::string, std::string> Values(const std::string& console) {
  std::map<std::string, std::string> values;
  std::istringstream in(console);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) values[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return values;
}

uint64_t HostDelta(const RunResult& r, const std::string& name) {
  for (const HostCounter& c : r.host_counters) {
    if (c.name == name) return c.delta;
  }
  return 0;
}

// The tracepoint's names for the three reasons: VMX's on kvm_intel, SVM's
// on kvm_amd.
struct ReasonNames {
  std::string cpuid, msr, hlt, io;
};
ReasonNames NamesHere() {
  std::error_code ec;
  if (std::filesystem::exists("/sys/module/kvm_intel", ec))
    return {"CPUID", "MSR_READ", "HLT", "IO_INSTRUCTION"};
  return {"cpuid", "msr", "hlt", "io"};
}

TEST(KernelExitsTest, PcExitsAreExactByReasonAndAddress) {
  REQUIRE_KVM();
  VmConfig config = GuestConfig(std::string(MINIVMM_PC_GUEST_DIR) + "/pc_exits.elf", "",
                                absl::Seconds(60), 0, false, 1);
  config.machine = MachineKind::kPc;
  config.kernel_exits = true;
  GuestRun run = RunGuestWith(config);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  ASSERT_EQ(run.result.exit_code, 1) << run.console;
  ASSERT_EQ(run.result.kernel_exits.size(), 1u);
  const KernelExitCounts& k = run.result.kernel_exits[0];
  EXPECT_EQ(k.lost, 0u);
  // Every exit KVM counted, none more.
  EXPECT_EQ(k.exits, HostDelta(run.result, "exits"));
  const std::map<std::string, std::string> v = Values(run.console);
  const uint64_t n = std::stoull(v.at("n"));
  const ReasonNames names = NamesHere();
  auto at = [&](const std::string& reason, const std::string& key) {
    auto it = k.by_reason_rip.find({reason, std::stoull(v.at(key), nullptr, 16)});
    return it == k.by_reason_rip.end() ? 0 : it->second;
  };
  EXPECT_EQ(at(names.cpuid, "cpuid_rip"), n);
  EXPECT_EQ(at(names.msr, "rdmsr_rip"), n);
  EXPECT_EQ(at(names.hlt, "hlt_rip"), n);
  // Its only ports are COM1 and debug-exit, both minivmm's: every port exit
  // KVM made reached minivmm.
  EXPECT_EQ(k.by_reason.at(names.io),
            run.result.stats.by_reason[static_cast<int>(ExitReason::kIo)]);
}

}  // namespace
}  // namespace minivmm::testing
