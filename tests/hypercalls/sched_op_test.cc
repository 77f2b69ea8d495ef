#include <gtest/gtest.h>

#include "tests/hypercalls/expect.h"

namespace minivmm {
namespace {

using testing::CheckedVm;

class SchedOpTest : public ::testing::Test {
 protected:
  CheckedVm vm_;
};

TEST_F(SchedOpTest, YieldRequestsYield) {
  const HypercallResult result = vm_.Result(MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD);
  EXPECT_EQ(testing::AbiRow(result.value, "sched_op.ok"), 0);
  EXPECT_EQ(result.refusal, nullptr);
  EXPECT_EQ(vm_.control.request, VcpuRequest::kYield);
}

TEST_F(SchedOpTest, BlockRequestsBlock) {
  EXPECT_EQ(vm_.Call(MVMM_HC_sched_op, MVMM_SCHEDOP_BLOCK), 0);
  EXPECT_EQ(vm_.control.request, VcpuRequest::kBlock);
}

TEST_F(SchedOpTest, ShutdownCarriesExitCode) {
  EXPECT_EQ(vm_.Call(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 255), 0);
  EXPECT_EQ(vm_.control.request, VcpuRequest::kShutdown);
  EXPECT_EQ(vm_.control.exit_code, 255);
}

TEST_F(SchedOpTest, ShutdownWithZero) {
  EXPECT_EQ(vm_.Call(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0), 0);
  EXPECT_EQ(vm_.control.request, VcpuRequest::kShutdown);
  EXPECT_EQ(vm_.control.exit_code, 0);
}

TEST_F(SchedOpTest, ShutdownCodeAbove255IsEinval) {
  const HypercallResult result = vm_.Result(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 256);
  EXPECT_EQ(testing::AbiRow(result.value, "sched_op.EINVAL.2"), -MVMM_EINVAL);
  EXPECT_STREQ(result.refusal, "exit code above 255");
  EXPECT_EQ(vm_.Call(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, ~0ull), -MVMM_EINVAL);
  EXPECT_EQ(vm_.control.request, VcpuRequest::kNone);
}

TEST_F(SchedOpTest, UnknownCommandIsEinval) {
  const HypercallResult result = vm_.Result(MVMM_HC_sched_op, 4);
  EXPECT_EQ(testing::AbiRow(result.value, "sched_op.EINVAL"), -MVMM_EINVAL);
  EXPECT_STREQ(result.refusal, "unknown cmd");
  EXPECT_EQ(vm_.Call(MVMM_HC_sched_op, ~0ull), -MVMM_EINVAL);
  EXPECT_EQ(vm_.control.request, VcpuRequest::kNone);
}

TEST_F(SchedOpTest, YieldDoesNotCancelPendingShutdown) {
  EXPECT_EQ(vm_.Call(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 7), 0);
  EXPECT_EQ(vm_.Call(MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD), 0);
  EXPECT_EQ(vm_.Call(MVMM_HC_sched_op, MVMM_SCHEDOP_BLOCK), 0);
  EXPECT_EQ(vm_.control.request, VcpuRequest::kShutdown);
  EXPECT_EQ(vm_.control.exit_code, 7);
}

}  // namespace
}  // namespace minivmm
