#include <gtest/gtest.h>

#include "tests/hypercalls/expect.h"

namespace minivmm {
namespace {

using testing::CheckedVm;

TEST(SetTimerOpTest, ArmsOneShotAtDeadline) {
  CheckedVm vm;
  const HypercallResult result = vm.Result(MVMM_HC_set_timer_op, 123456789);
  EXPECT_EQ(result.value, 0);
  EXPECT_EQ(result.refusal, nullptr);
  EXPECT_EQ(vm.timer.armed, std::vector<uint64_t>{123456789});
}

TEST(SetTimerOpTest, ZeroIsPassedOnToCancel) {
  CheckedVm vm;
  EXPECT_EQ(vm.Call(MVMM_HC_set_timer_op, 0), 0);
  EXPECT_EQ(vm.timer.armed, std::vector<uint64_t>{0});
}

TEST(SetTimerOpTest, NoTimerIsEnosys) {
  CheckedVm vm;
  vm.env.timer = nullptr;
  const HypercallResult result = vm.Result(MVMM_HC_set_timer_op, 5);
  EXPECT_EQ(result.value, -MVMM_ENOSYS);
  EXPECT_STREQ(result.refusal, "no timer wired");
}

}  // namespace
}  // namespace minivmm
