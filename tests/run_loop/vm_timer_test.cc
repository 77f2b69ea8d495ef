// VmTimer: what can fire, and that what is due does fire. No timing is
// asserted beyond "eventually" (a generous cap so that a hang fails).
#include "vmm/run/vm_timer.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace minivmm {
namespace {

bool Eventually(const std::atomic<int>& counter, int at_least) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (counter.load() < at_least) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Two vCPUs' timers; interrupts_ counts vCPU 0's, others_ vCPU 1's.
bool EventuallyCannotFire(const VmTimer& timer, uint32_t cpu) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (timer.CanFire(cpu)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

class VmTimerTest : public ::testing::Test {
 protected:
  std::atomic<int> interrupts_{0};
  std::atomic<int> others_{0};
  std::atomic<int> timeouts_{0};
  VmTimer timer_{2, [this](uint32_t cpu) { ++(cpu == 0 ? interrupts_ : others_); },
                 [this] { ++timeouts_; }};
};

TEST_F(VmTimerTest, NothingArmedCannotFire) {
  timer_.Start(0, std::nullopt);
  EXPECT_FALSE(timer_.CanFire(0));
}

TEST_F(VmTimerTest, OneShotCanFireUntilCancelled) {
  timer_.Start(0, std::nullopt);
  timer_.SetOneShot(uint64_t{1} << 50);  // far in the future
  EXPECT_TRUE(timer_.CanFire(0));
  timer_.SetOneShot(0);
  EXPECT_FALSE(timer_.CanFire(0));
  EXPECT_EQ(interrupts_.load(), 0);
}

TEST_F(VmTimerTest, DeadlineInThePastFiresOnceAndDisarms) {
  timer_.Start(0, std::nullopt);
  timer_.SetOneShot(1);
  ASSERT_TRUE(Eventually(interrupts_, 1));
  timer_.Stop();  // the thread has finished raising it
  EXPECT_FALSE(timer_.CanFire(0));
  EXPECT_EQ(interrupts_.load(), 1);
}

// The one-shot is disarmed before its interrupt is raised, outside the
// timer's lock: until on_interrupt has returned, CanFire() must still say
// yes, or the halted-forever rule could stop a run about to be woken.
TEST(VmTimerFiringTest, CanFireUntilTheOneShotsInterruptIsRaised) {
  std::atomic<int> raised{0};
  std::atomic<int> could_fire_while_raising{0};
  VmTimer* self = nullptr;
  VmTimer timer(
      1,
      [&](uint32_t cpu) {
        if (self->CanFire(cpu)) ++could_fire_while_raising;
        ++raised;
      },
      [] {});
  self = &timer;
  timer.Start(0, std::nullopt);
  timer.SetOneShot(1);
  ASSERT_TRUE(Eventually(raised, 1));
  timer.Stop();
  EXPECT_EQ(could_fire_while_raising.load(), 1);
  EXPECT_FALSE(timer.CanFire(0));
}

TEST_F(VmTimerTest, HugeDeadlineDoesNotOverflow) {
  timer_.Start(0, std::nullopt);
  timer_.SetOneShot(~uint64_t{0});
  EXPECT_TRUE(timer_.CanFire(0));
  EXPECT_EQ(interrupts_.load(), 0);
}

TEST_F(VmTimerTest, PeriodicTimerKeepsFiring) {
  timer_.Start(1000, std::nullopt);
  EXPECT_TRUE(timer_.CanFire(0));
  EXPECT_TRUE(Eventually(interrupts_, 3));
}

TEST_F(VmTimerTest, WatchdogFiresOnce) {
  timer_.Start(0, std::chrono::milliseconds(1));
  ASSERT_TRUE(Eventually(timeouts_, 1));
  EXPECT_FALSE(timer_.CanFire(0));  // the watchdog is not an interrupt source
}

TEST_F(VmTimerTest, NothingFiresAfterStop) {
  timer_.Start(1000, std::nullopt);
  timer_.Stop();
  int seen = interrupts_.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(interrupts_.load(), seen);
  timer_.Stop();  // idempotent
}

TEST_F(VmTimerTest, EachVcpusOneShotFiresOnItsOwnVcpu) {
  timer_.Start(0, std::nullopt);
  ASSERT_TRUE(timer_.SetVcpuOneShot(1, 1));
  ASSERT_TRUE(Eventually(others_, 1));
  timer_.Stop();  // the thread has finished raising it
  EXPECT_FALSE(timer_.CanFire(1));
  EXPECT_FALSE(timer_.CanFire(0));
  EXPECT_EQ(others_.load(), 1);
  EXPECT_EQ(interrupts_.load(), 0);
}

TEST_F(VmTimerTest, OneVcpusOneShotLeavesTheOthersAlone) {
  timer_.Start(0, std::nullopt);
  ASSERT_TRUE(timer_.SetVcpuOneShot(0, uint64_t{1} << 50));
  ASSERT_TRUE(timer_.SetVcpuOneShot(1, uint64_t{1} << 50));
  ASSERT_TRUE(timer_.SetVcpuOneShot(1, 0));  // cancels vCPU 1's only
  EXPECT_TRUE(timer_.CanFire(0));
  EXPECT_FALSE(timer_.CanFire(1));
}

TEST_F(VmTimerTest, AVcpusPeriodicTimerFiresOnItsOwnVcpuUntilStopped) {
  timer_.Start(0, std::nullopt);
  ASSERT_TRUE(timer_.SetPeriodic(1, 1'000'000));  // 1 ms
  EXPECT_TRUE(timer_.CanFire(1));
  EXPECT_FALSE(timer_.CanFire(0));
  ASSERT_TRUE(Eventually(others_, 3));
  ASSERT_TRUE(timer_.SetPeriodic(1, 0));
  // An interrupt taken off the timer before the stop may still be being
  // raised; once it is, nothing can fire.
  ASSERT_TRUE(EventuallyCannotFire(timer_, 1));
  const int seen = others_.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(others_.load(), seen);
  EXPECT_EQ(interrupts_.load(), 0);
}

TEST_F(VmTimerTest, SettingVcpu0sPeriodReplacesTheTimerHzOne) {
  timer_.Start(1000, std::nullopt);
  const int seen = interrupts_.load();
  ASSERT_TRUE(timer_.SetPeriodic(0, uint64_t{3600} * 1'000'000'000));
  EXPECT_TRUE(timer_.CanFire(0));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // No 1 kHz tick any more: at most one taken off the timer before the set.
  EXPECT_LE(interrupts_.load(), seen + 1);
  ASSERT_TRUE(timer_.SetPeriodic(0, 0));
  EXPECT_TRUE(EventuallyCannotFire(timer_, 0));
}

TEST_F(VmTimerTest, VcpuOutOfRangeChangesNothing) {
  timer_.Start(0, std::nullopt);
  EXPECT_FALSE(timer_.SetVcpuOneShot(2, 1));
  EXPECT_FALSE(timer_.SetPeriodic(2, 1'000'000));
  EXPECT_FALSE(timer_.CanFire(2));
  EXPECT_FALSE(timer_.CanFire(0));
  EXPECT_FALSE(timer_.CanFire(1));
}

TEST_F(VmTimerTest, HugePeriodDoesNotOverflow) {
  timer_.Start(0, std::nullopt);
  ASSERT_TRUE(timer_.SetPeriodic(1, ~uint64_t{0}));
  EXPECT_TRUE(timer_.CanFire(1));
  EXPECT_EQ(others_.load(), 0);
}

}  // namespace
}  // namespace minivmm
