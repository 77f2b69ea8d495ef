#include <gtest/gtest.h>

#include "tests/hypercalls/test_vm.h"

namespace minivmm {
namespace {

using testing::TestVm;

TEST(SetTimerOpTest, ArmsOneShotAtDeadline) {
  TestVm vm;
  const HypercallResult result = vm.Result(MVMM_HC_set_timer_op, 123456789);
  EXPECT_EQ(result.value, 0);
  EXPECT_EQ(result.refusal, nullptr);
  EXPECT_EQ(vm.timer.armed, std::vector<uint64_t>{123456789});
}

TEST(SetTimerOpTest, ZeroIsPassedOnToCancel) {
  TestVm vm;
  EXPECT_EQ(vm.Call(MVMM_HC_set_timer_op, 0), 0);
  EXPECT_EQ(vm.timer.armed, std::vector<uint64_t>{0});
}

TEST(SetTimerOpTest, NoTimerIsEnosys) {
  TestVm vm;
  vm.env.timer = nullptr;
  const HypercallResult result = vm.Result(MVMM_HC_set_timer_op, 5);
  EXPECT_EQ(result.value, -MVMM_ENOSYS);
  EXPECT_STREQ(result.refusal, "no timer wired");
}

}  // namespace
}  // namespace minivmm
