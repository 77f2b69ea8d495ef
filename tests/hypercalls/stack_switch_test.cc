#include <gtest/gtest.h>

#include <vector>

#include "tests/hypercalls/expect.h"

namespace minivmm {
namespace {

using testing::CheckedVm;

constexpr uint64_t kRsp0Gpa = MVMM_TSS_GPA + 4;

class StackSwitchTest : public ::testing::Test {
 protected:
  CheckedVm vm_;
};

TEST_F(StackSwitchTest, SetsTssRsp0) {
  const HypercallResult result = vm_.Result(MVMM_HC_stack_switch, MVMM_SEL_KERNEL_DS, 0x7FF000);
  EXPECT_EQ(testing::AbiRow(result.value, "stack_switch.ok"), 0);
  EXPECT_EQ(result.refusal, nullptr);
  EXPECT_EQ(vm_.Peek64(kRsp0Gpa), 0x7FF000u);
  EXPECT_EQ(vm_.Peek64(MVMM_TSS_GPA + 12), 0u);  // rsp1 untouched
}

TEST_F(StackSwitchTest, CanonicalEdgesAreAccepted) {
  EXPECT_EQ(vm_.Call(MVMM_HC_stack_switch, MVMM_SEL_KERNEL_DS, 0x00007FFFFFFFFFF0ull), 0);
  EXPECT_EQ(vm_.Peek64(kRsp0Gpa), 0x00007FFFFFFFFFF0ull);
  EXPECT_EQ(vm_.Call(MVMM_HC_stack_switch, MVMM_SEL_KERNEL_DS, 0xFFFF800000000000ull), 0);
  EXPECT_EQ(vm_.Peek64(kRsp0Gpa), 0xFFFF800000000000ull);
}

TEST_F(StackSwitchTest, NonCanonicalRspIsEinval) {
  vm_.Poke64(kRsp0Gpa, 0x1234);
  const HypercallResult result =
      vm_.Result(MVMM_HC_stack_switch, MVMM_SEL_KERNEL_DS, 0x0000800000000000ull);
  EXPECT_EQ(testing::AbiRow(result.value, "stack_switch.EINVAL.2"), -MVMM_EINVAL);
  EXPECT_STREQ(result.refusal, "rsp not canonical");
  EXPECT_EQ(vm_.Call(MVMM_HC_stack_switch, MVMM_SEL_KERNEL_DS, 0xFFFF7FFFFFFFFFFFull),
            -MVMM_EINVAL);
  EXPECT_EQ(vm_.Peek64(kRsp0Gpa), 0x1234u);
}

TEST_F(StackSwitchTest, SsOtherThanKernelDataIsEinval) {
  for (uint64_t ss : {0ull, 0x08ull, 0x13ull, 0x1Bull, 0x10ull | (1ull << 32)}) {
    EXPECT_EQ(vm_.Call(MVMM_HC_stack_switch, ss, 0x7FF000), -MVMM_EINVAL) << ss;
  }
  EXPECT_EQ(vm_.Peek64(kRsp0Gpa), 0u);
}

TEST_F(StackSwitchTest, SsIsCheckedBeforeRsp) {
  const HypercallResult result = vm_.Result(MVMM_HC_stack_switch, 0x18, 0x0000800000000000ull);
  EXPECT_EQ(testing::AbiRow(result.value, "stack_switch.EINVAL"), -MVMM_EINVAL);
  EXPECT_STREQ(result.refusal, "ss is not MVMM_SEL_KERNEL_DS");
}

// Each vCPU has a TSS of its own (minivmm_abi/boot.h): a call from vCPU n
// writes rsp0 of TSS n and no other byte of the TSS page.
TEST_F(StackSwitchTest, WritesOnlyTheCallingVcpusTss) {
  constexpr uint32_t kCpus = 4;
  vm_.cpus.cpus = kCpus;
  for (uint32_t cpu = 0; cpu < kCpus; ++cpu) {
    SCOPED_TRACE(cpu);
    std::vector<uint64_t> want;
    for (uint64_t gpa = MVMM_TSS_GPA; gpa < MVMM_TSS_GPA + 4096; gpa += 8)
      want.push_back(vm_.Peek64(gpa));
    const uint64_t rsp = 0x7FF000 + 0x1000 * cpu;
    // rsp0 is at byte 4 of the TSS, so it straddles two of the 8-byte words read here.
    const uint64_t at = MVMM_CPU_TSS_GPA(cpu) + 4;
    const uint64_t before = vm_.Peek64(at);
    vm_.exit.vcpu_id = cpu;
    ASSERT_EQ(vm_.Call(MVMM_HC_stack_switch, MVMM_SEL_KERNEL_DS, rsp), 0);
    EXPECT_EQ(vm_.Peek64(at), rsp);
    vm_.Poke64(at, before);  // undo the one store: the page must be as it was
    for (uint64_t gpa = MVMM_TSS_GPA, i = 0; gpa < MVMM_TSS_GPA + 4096; gpa += 8, ++i)
      EXPECT_EQ(vm_.Peek64(gpa), want[i]) << std::hex << gpa;
    vm_.Poke64(at, rsp);
  }
  for (uint32_t cpu = 0; cpu < kCpus; ++cpu)
    EXPECT_EQ(vm_.Peek64(MVMM_CPU_TSS_GPA(cpu) + 4), 0x7FF000 + 0x1000 * cpu) << cpu;
}

TEST(StackSwitchSmallRamTest, TssOutsideRamIsEfault) {
  CheckedVm vm(MVMM_TSS_GPA + 8);  // rsp0 would end 4 bytes past RAM
  const HypercallResult result = vm.Result(MVMM_HC_stack_switch, MVMM_SEL_KERNEL_DS, 0x1000);
  EXPECT_EQ(testing::AbiRow(result.value, "stack_switch.EFAULT"), -MVMM_EFAULT);
  EXPECT_STREQ(result.refusal, "TSS outside RAM");
}

}  // namespace
}  // namespace minivmm
