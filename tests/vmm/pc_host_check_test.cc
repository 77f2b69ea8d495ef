// The PC machine's host check judged on each way its probe's run can end
// (vmm/machine/pc_host_check.h); the probe itself runs on every KVM in
// PcHostCheckTest (tests/integration/pc_machine_test.cc).
#include "vmm/machine/pc_host_check.h"

#include <cerrno>
#include <string>

#include "gtest/gtest.h"

namespace minivmm {
namespace {

std::string Refusal(const std::string& how) {
  return std::string(kPcNoProtectedModeEvents) + " (a #UD through the guest's IDT and its handler's iret ended in " + how +
         ")";
}

void ExpectRefused(const VcpuExit& exit, const std::string& how) {
  absl::Status verdict = JudgePcEventProbe(exit);
  EXPECT_EQ(verdict.code(), absl::StatusCode::kFailedPrecondition) << verdict;
  EXPECT_EQ(verdict.message(), Refusal(how));
}

TEST(PcHostCheckJudgeTest, OnlyTheHandlersByteOnItsPortPasses) {
  uint8_t byte = kPcProbeByte;
  EXPECT_TRUE(JudgePcEventProbe(IoOut{kPcProbePort, 1, {&byte, 1}}).ok());
  uint8_t other = kPcProbeByte + 1;
  ExpectRefused(IoOut{kPcProbePort, 1, {&other, 1}}, "a 1-byte write to port 0x80");
  ExpectRefused(IoOut{0x81, 1, {&byte, 1}}, "a 1-byte write to port 0x81");
  uint8_t word[2] = {kPcProbeByte, 0};
  ExpectRefused(IoOut{kPcProbePort, 2, {word, 2}}, "a 2-byte write to port 0x80");
  ExpectRefused(IoIn{kPcProbePort, 1, {&byte, 1}}, "a 1-byte read of port 0x80");
}

TEST(PcHostCheckJudgeTest, EveryOtherEndIsNamedInTheRefusal) {
  // kvm_pvm's (seen): its emulator gives up on the handler's iret.
  ExpectRefused(InternalError{1}, "KVM_EXIT_INTERNAL_ERROR, suberror 1");
  ExpectRefused(Hlt{}, "a HLT");
  ExpectRefused(Shutdown{}, "a triple fault (KVM_EXIT_SHUTDOWN)");
  ExpectRefused(Interrupted{}, "no exit within the time limit");
  ExpectRefused(FailEntry{0x80000021}, "KVM_EXIT_FAIL_ENTRY, reason 0x80000021");
  ExpectRefused(RunFailed{EINVAL}, "KVM_RUN failing: Invalid argument");
  uint8_t data[4] = {};
  ExpectRefused(MmioWrite{0xfee00000, {data, 4}}, "an MMIO access at 0xfee00000");
}

}  // namespace
}  // namespace minivmm
