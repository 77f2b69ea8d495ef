#include <gtest/gtest.h>

#include "tests/hypercalls/test_vm.h"

namespace minivmm {
namespace {

using testing::TestVm;

TEST(SetTimerOpTest, ArmsOneShotAtDeadline) {
  TestVm vm;
  EXPECT_EQ(vm.Call(MVMM_HC_set_timer_op, 123456789), 0);
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
  EXPECT_EQ(vm.Call(MVMM_HC_set_timer_op, 5), -MVMM_ENOSYS);
}

}  // namespace
}  // namespace minivmm
