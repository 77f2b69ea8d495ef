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

class VmTimerTest : public ::testing::Test {
 protected:
  std::atomic<int> interrupts_{0};
  std::atomic<int> timeouts_{0};
  VmTimer timer_{[this] { ++interrupts_; }, [this] { ++timeouts_; }};
};

TEST_F(VmTimerTest, NothingArmedCannotFire) {
  timer_.Start(0, std::nullopt);
  EXPECT_FALSE(timer_.CanFire());
}

TEST_F(VmTimerTest, OneShotCanFireUntilCancelled) {
  timer_.Start(0, std::nullopt);
  timer_.SetOneShot(uint64_t{1} << 50);  // far in the future
  EXPECT_TRUE(timer_.CanFire());
  timer_.SetOneShot(0);
  EXPECT_FALSE(timer_.CanFire());
  EXPECT_EQ(interrupts_.load(), 0);
}

TEST_F(VmTimerTest, DeadlineInThePastFiresOnceAndDisarms) {
  timer_.Start(0, std::nullopt);
  timer_.SetOneShot(1);
  ASSERT_TRUE(Eventually(interrupts_, 1));
  EXPECT_FALSE(timer_.CanFire());
  timer_.Stop();
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
      [&] {
        if (self->CanFire()) ++could_fire_while_raising;
        ++raised;
      },
      [] {});
  self = &timer;
  timer.Start(0, std::nullopt);
  timer.SetOneShot(1);
  ASSERT_TRUE(Eventually(raised, 1));
  timer.Stop();
  EXPECT_EQ(could_fire_while_raising.load(), 1);
  EXPECT_FALSE(timer.CanFire());
}

TEST_F(VmTimerTest, HugeDeadlineDoesNotOverflow) {
  timer_.Start(0, std::nullopt);
  timer_.SetOneShot(~uint64_t{0});
  EXPECT_TRUE(timer_.CanFire());
  EXPECT_EQ(interrupts_.load(), 0);
}

TEST_F(VmTimerTest, PeriodicTimerKeepsFiring) {
  timer_.Start(1000, std::nullopt);
  EXPECT_TRUE(timer_.CanFire());
  EXPECT_TRUE(Eventually(interrupts_, 3));
}

TEST_F(VmTimerTest, WatchdogFiresOnce) {
  timer_.Start(0, std::chrono::milliseconds(1));
  ASSERT_TRUE(Eventually(timeouts_, 1));
  EXPECT_FALSE(timer_.CanFire());  // the watchdog is not an interrupt source
}

TEST_F(VmTimerTest, NothingFiresAfterStop) {
  timer_.Start(1000, std::nullopt);
  timer_.Stop();
  int seen = interrupts_.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(interrupts_.load(), seen);
  timer_.Stop();  // idempotent
}

}  // namespace
}  // namespace minivmm
