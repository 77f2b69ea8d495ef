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
  timer_.SetVcpuOneShot(0, uint64_t{1} << 50);  // far in the future
  EXPECT_TRUE(timer_.CanFire(0));
  timer_.SetVcpuOneShot(0, 0);
  EXPECT_FALSE(timer_.CanFire(0));
  EXPECT_EQ(interrupts_.load(), 0);
}

TEST_F(VmTimerTest, DeadlineInThePastFiresOnceAndDisarms) {
  timer_.Start(0, std::nullopt);
  timer_.SetVcpuOneShot(0, 1);
  ASSERT_TRUE(Eventually(interrupts_, 1));
  EXPECT_FALSE(timer_.CanFire(0));
  timer_.Stop();
  EXPECT_EQ(interrupts_.load(), 1);
}

// A one-shot is disarmed and its interrupt raised in one step: CanFire()
// never says "cannot fire" while a fired interrupt is still on its way (or
// the halted-forever rule could stop a run about to be woken), and says it
// as soon as the interrupt is out. The slow callback widens the window.
TEST(VmTimerFiringTest, CannotFireOnlyOnceTheOneShotsInterruptIsRaised) {
  std::atomic<bool> entered{false};
  std::atomic<bool> raised{false};
  VmTimer timer(
      1,
      [&](uint32_t) {
        entered = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        raised = true;
      },
      [] {});
  timer.Start(0, std::nullopt);
  timer.SetVcpuOneShot(0, 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!entered && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_TRUE(entered);
  EXPECT_FALSE(timer.CanFire(0));
  EXPECT_TRUE(raised);  // CanFire answered only once the interrupt was out
}

TEST_F(VmTimerTest, HugeDeadlineDoesNotOverflow) {
  timer_.Start(0, std::nullopt);
  timer_.SetVcpuOneShot(0, ~uint64_t{0});
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
  EXPECT_FALSE(timer_.CanFire(1));
  EXPECT_FALSE(timer_.CanFire(0));
  timer_.Stop();
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
  EXPECT_FALSE(timer_.CanFire(1));
  const int seen = others_.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(others_.load(), seen);
  EXPECT_EQ(interrupts_.load(), 0);
}

TEST_F(VmTimerTest, SettingVcpu0sPeriodReplacesTheTimerHzOne) {
  timer_.Start(1000, std::nullopt);
  ASSERT_TRUE(timer_.SetPeriodic(0, uint64_t{3600} * 1'000'000'000));
  EXPECT_TRUE(timer_.CanFire(0));
  const int seen = interrupts_.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(interrupts_.load(), seen);  // no 1 kHz tick any more
  ASSERT_TRUE(timer_.SetPeriodic(0, 0));
  EXPECT_FALSE(timer_.CanFire(0));
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
