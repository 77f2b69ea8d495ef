#include <gtest/gtest.h>

#include "tests/hypercalls/expect.h"

namespace minivmm {
namespace {

using testing::CheckedVm;

TEST(SetTimerOpTest, ArmsOneShotAtDeadline) {
  CheckedVm vm;
  const HypercallResult result = vm.Result(MVMM_HC_set_timer_op, 123456789);
  EXPECT_EQ(testing::AbiRow(result.value, "set_timer_op.ok"), 0);
  EXPECT_EQ(result.refusal, nullptr);
  EXPECT_EQ(vm.timer.armed, std::vector<uint64_t>{123456789});
  EXPECT_EQ(vm.timer.armed_by, std::vector<uint32_t>{0});
}

TEST(SetTimerOpTest, ArmsTheCallingVcpusOwnOneShot) {
  CheckedVm vm;
  vm.exit.vcpu_id = 3;
  EXPECT_EQ(vm.Call(MVMM_HC_set_timer_op, 42), 0);
  vm.exit.vcpu_id = 1;
  EXPECT_EQ(vm.Call(MVMM_HC_set_timer_op, 0), 0);
  EXPECT_EQ(vm.timer.armed, (std::vector<uint64_t>{42, 0}));
  EXPECT_EQ(vm.timer.armed_by, (std::vector<uint32_t>{3, 1}));
}

// vcpu_op(set_periodic_timer / stop_periodic_timer): the calling vCPU's own
// periodic timer.
TEST(PeriodicTimerTest, SetsAndStopsTheCallingVcpusOwn) {
  CheckedVm vm;
  vm.exit.vcpu_id = 2;
  EXPECT_EQ(vm.Call(MVMM_HC_vcpu_op, MVMM_VCPUOP_SET_PERIODIC_TIMER, 2, 4'000'000), 0);
  EXPECT_EQ(vm.Call(MVMM_HC_vcpu_op, MVMM_VCPUOP_SET_PERIODIC_TIMER, 2, MVMM_PERIODIC_TIMER_MIN_NS),
            0);
  EXPECT_EQ(vm.Call(MVMM_HC_vcpu_op, MVMM_VCPUOP_SET_PERIODIC_TIMER, 2, MVMM_PERIODIC_TIMER_MAX_NS),
            0);
  EXPECT_EQ(vm.Call(MVMM_HC_vcpu_op, MVMM_VCPUOP_STOP_PERIODIC_TIMER, 2, 0), 0);
  EXPECT_EQ(vm.Call(MVMM_HC_vcpu_op, MVMM_VCPUOP_STOP_PERIODIC_TIMER, 2, 12345), 0);  // ignored
  using P = testing::RecordingTimer::Period;
  EXPECT_EQ(vm.timer.periods, (std::vector<P>{{2, 4'000'000},
                                              {2, MVMM_PERIODIC_TIMER_MIN_NS},
                                              {2, MVMM_PERIODIC_TIMER_MAX_NS},
                                              {2, 0},
                                              {2, 0}}));
  EXPECT_EQ(vm.stats.hc_errors[MVMM_HC_vcpu_op], 0u);
  EXPECT_TRUE(vm.timer.armed.empty());
}

TEST(PeriodicTimerTest, BadInputIsRefusedAndChangesNothing) {
  struct Bad {
    uint64_t cmd, vcpu, period;
    const char* row;
    const char* reason;
  };
  constexpr uint64_t kSet = MVMM_VCPUOP_SET_PERIODIC_TIMER;
  constexpr uint64_t kStop = MVMM_VCPUOP_STOP_PERIODIC_TIMER;
  CheckedVm vm;
  vm.exit.vcpu_id = 1;
  for (const Bad& c : {
           Bad{kSet, 0, 4'000'000, "vcpu_op.EINVAL.4", "not the calling vCPU"},
           Bad{kSet, 2, 4'000'000, "vcpu_op.EINVAL.4", "not the calling vCPU"},
           Bad{kSet, ~0ull, 4'000'000, "vcpu_op.EINVAL.4", "not the calling vCPU"},
           Bad{kSet, 1ull << 32 | 1, 4'000'000, "vcpu_op.EINVAL.4", "not the calling vCPU"},
           Bad{kStop, 0, 0, "vcpu_op.EINVAL.4", "not the calling vCPU"},
           Bad{kSet, 1, 0, "vcpu_op.EINVAL.5", "period outside 1 ms to 1 hour"},
           Bad{kSet, 1, MVMM_PERIODIC_TIMER_MIN_NS - 1, "vcpu_op.EINVAL.5",
               "period outside 1 ms to 1 hour"},
           Bad{kSet, 1, MVMM_PERIODIC_TIMER_MAX_NS + 1, "vcpu_op.EINVAL.5",
               "period outside 1 ms to 1 hour"},
           Bad{kSet, 1, ~0ull, "vcpu_op.EINVAL.5", "period outside 1 ms to 1 hour"},
       }) {
    SCOPED_TRACE(::testing::Message()
                 << "cmd " << c.cmd << " vcpu " << c.vcpu << " period " << c.period);
    const HypercallResult result = vm.Result(MVMM_HC_vcpu_op, c.cmd, c.vcpu, c.period);
    testing::AbiRow(result.value, c.row);
    EXPECT_STREQ(result.refusal, c.reason);
  }
  EXPECT_TRUE(vm.timer.periods.empty());
  vm.env.timer = nullptr;
  const HypercallResult none = vm.Result(MVMM_HC_vcpu_op, kSet, 1, 4'000'000);
  EXPECT_EQ(testing::AbiRow(none.value, "vcpu_op.ENOSYS"), -MVMM_ENOSYS);
  EXPECT_STREQ(none.refusal, "no periodic timer for this vCPU");
}

// The VM's timer has no vCPU beyond its count: -ENOSYS, nothing set.
TEST(PeriodicTimerTest, AVcpuTheTimerDoesNotHaveIsEnosys) {
  CheckedVm vm;
  vm.timer.cpus = 2;
  vm.exit.vcpu_id = 2;
  const HypercallResult result =
      vm.Result(MVMM_HC_vcpu_op, MVMM_VCPUOP_SET_PERIODIC_TIMER, 2, 4'000'000);
  EXPECT_EQ(result.value, -MVMM_ENOSYS);
  EXPECT_TRUE(vm.timer.periods.empty());
  EXPECT_EQ(vm.Call(MVMM_HC_set_timer_op, 5), -MVMM_ENOSYS);
  EXPECT_TRUE(vm.timer.armed.empty());
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
  EXPECT_EQ(testing::AbiRow(result.value, "set_timer_op.ENOSYS"), -MVMM_ENOSYS);
  EXPECT_STREQ(result.refusal, "no timer wired");
}

}  // namespace
}  // namespace minivmm
