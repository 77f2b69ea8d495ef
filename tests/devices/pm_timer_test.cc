#include "devices/pm_timer.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tests/common/fake_vm.h"

namespace minivmm {
namespace {

constexpr uint64_t kStartNs = 5'000'000'000;  // the fake clock's reading at construction
constexpr uint64_t kSecond = 1'000'000'000;

class PmTimerTest : public ::testing::Test {
 protected:
  // The counter `elapsed_ns` after construction, read with a 4-byte access.
  uint32_t At(uint64_t elapsed_ns) {
    now_ns_ = kStartNs + elapsed_ns;
    return In(0, 4);
  }
  uint32_t In(uint64_t offset, size_t size) {
    std::vector<uint8_t> data(size, 0xEE);
    timer_.Read(offset, data, vm_.exit);
    uint32_t value = 0;
    for (size_t i = 0; i < size && i < 4; ++i) value |= uint32_t{data[i]} << (8 * i);
    return value;
  }

  testing::FakeVm vm_;
  uint64_t now_ns_ = kStartNs;
  PmTimer timer_{[this] { return now_ns_; }};
};

TEST_F(PmTimerTest, NameIsPmTimer) { EXPECT_EQ(timer_.Name(), "pm-timer"); }

TEST_F(PmTimerTest, ReadsZeroAtConstruction) { EXPECT_EQ(At(0), 0u); }

TEST_F(PmTimerTest, OneSecondIsTheFrequency) { EXPECT_EQ(At(kSecond), 3'579'545u); }

TEST_F(PmTimerTest, TicksRoundDown) {
  EXPECT_EQ(At(1'000'000), 3'579u);  // 1 ms = 3579.545 ticks
  EXPECT_EQ(At(279), 0u);            // one tick is 279.37 ns
  EXPECT_EQ(At(280), 1u);
  EXPECT_EQ(At(1'000), 3u);
}

TEST_F(PmTimerTest, CounterWrapsAt24Bits) {
  // 5 s = 17897725 ticks = 2^24 + 1120509.
  EXPECT_EQ(At(5 * kSecond), 17'897'725u - (1u << 24));
  EXPECT_EQ(At(5 * kSecond), 1'120'509u);
}

TEST_F(PmTimerTest, HighByteReadsZero) {
  now_ns_ = kStartNs + 4 * kSecond + 686'000'000;  // just under 2^24 ticks
  EXPECT_EQ(In(3, 1), 0u);
  EXPECT_EQ(In(0, 4) >> 24, 0u);
  EXPECT_EQ(In(0, 4), 16'773'747u);
}

TEST_F(PmTimerTest, HugeElapsedTimeDoesNotOverflow) {
  const uint64_t elapsed = UINT64_MAX - kStartNs;
  EXPECT_EQ(PmTimer::TicksIn(UINT64_MAX), 66'030'950'515'326'656u);
  EXPECT_EQ(At(elapsed), PmTimer::TicksIn(elapsed) & PmTimer::kCounterMask);
}

TEST_F(PmTimerTest, NarrowReadsReturnLowBytes) {
  now_ns_ = kStartNs + 3 * kSecond;  // 10738635 ticks = 0xA3DBCB
  EXPECT_EQ(In(0, 4), 0xA3DBCBu);
  EXPECT_EQ(In(0, 1), 0xCBu);
  EXPECT_EQ(In(0, 2), 0xDBCBu);
  EXPECT_EQ(In(1, 1), 0xDBu);
  EXPECT_EQ(In(2, 2), 0x00A3u);
}

TEST_F(PmTimerTest, BytesPastTheRegisterReadZero) {
  now_ns_ = kStartNs + 3 * kSecond;
  std::vector<uint8_t> data(8, 0xEE);
  timer_.Read(0, data, vm_.exit);
  EXPECT_EQ(data, (std::vector<uint8_t>{0xCB, 0xDB, 0xA3, 0, 0, 0, 0, 0}));
  std::vector<uint8_t> far(2, 0xEE);
  timer_.Read(UINT64_MAX, far, vm_.exit);
  EXPECT_EQ(far, (std::vector<uint8_t>{0, 0}));
}

TEST_F(PmTimerTest, WritesAreIgnored) {
  now_ns_ = kStartNs + kSecond;
  const uint8_t zero[4] = {0, 0, 0, 0};
  timer_.Write(0, zero, vm_.exit);
  EXPECT_EQ(In(0, 4), 3'579'545u);
  EXPECT_EQ(timer_.ignored_writes(), 1u);
}

TEST_F(PmTimerTest, ClockSteppingBackReadsZero) {
  now_ns_ = kStartNs - 1;
  EXPECT_EQ(In(0, 4), 0u);
}

TEST_F(PmTimerTest, DefaultClockNeverGoesBack) {
  const uint64_t first = PmTimer::MonotonicNs();
  EXPECT_GE(PmTimer::MonotonicNs(), first);
}

TEST_F(PmTimerTest, DefaultClockedTimerKeepsTheTopByteZero) {
  PmTimer timer;
  uint8_t data[4] = {0xEE, 0xEE, 0xEE, 0xEE};
  timer.Read(0, data, vm_.exit);
  EXPECT_EQ(data[3], 0);
}

}  // namespace
}  // namespace minivmm
