#include "devices/rtc_cmos.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tests/common/fake_vm.h"

namespace minivmm {
namespace rtc_cmos_test {
namespace {

constexpr uint64_t kStartNs = 5'000'000'000;  // the fake clock's reading at construction
constexpr uint64_t kSecond = 1'000'000'000;
constexpr int64_t kWall = 1'796'586'307;  // 2026-12-06 19:45:07 UTC, a Sunday

class RtcCmosTest : public ::testing::Test {
 protected:
  RtcCmos::Config MakeConfig() {
    RtcCmos::Config config;
    config.wall_seconds = kWall;
    config.clock = [this] { return now_ns_; };
    return config;
  }
  // The clock `elapsed_ns` after construction.
  void At(uint64_t elapsed_ns) { now_ns_ = kStartNs + elapsed_ns; }
  uint8_t Get(uint8_t index) { return Get(rtc_, index); }
  uint8_t Get(RtcCmos& rtc, uint8_t index) {
    Out(rtc, RtcCmos::kIndexOffset, index);
    uint8_t data[1] = {0xEE};
    rtc.Read(RtcCmos::kDataOffset, data, vm_.exit);
    return data[0];
  }
  void Set(uint8_t index, uint8_t value) {
    Out(rtc_, RtcCmos::kIndexOffset, index);
    Out(rtc_, RtcCmos::kDataOffset, value);
  }
  void Out(RtcCmos& rtc, uint64_t offset, uint8_t value) {
    const uint8_t data[1] = {value};
    rtc.Write(offset, data, vm_.exit);
  }
  // Seconds, minutes, hours, day of week, day, month, year, century.
  std::vector<uint8_t> Time() {
    std::vector<uint8_t> out;
    for (uint8_t index : {0x00, 0x02, 0x04, 0x06, 0x07, 0x08, 0x09, 0x32})
      out.push_back(Get(index));
    return out;
  }
  void SetAlarm(uint8_t hours, uint8_t minutes, uint8_t seconds) {
    Set(RtcCmos::kHoursAlarm, hours);
    Set(RtcCmos::kMinutesAlarm, minutes);
    Set(RtcCmos::kSecondsAlarm, seconds);
  }

  ::minivmm::testing::FakeVm vm_;
  uint64_t now_ns_ = kStartNs;
  RtcCmos rtc_{MakeConfig()};
};

using Bytes = std::vector<uint8_t>;

TEST_F(RtcCmosTest, NameIsRtc) { EXPECT_EQ(rtc_.Name(), "rtc"); }

TEST_F(RtcCmosTest, RegistersStartAtTheirDefaults) {
  EXPECT_EQ(Get(RtcCmos::kRegA), 0x26);
  EXPECT_EQ(Get(RtcCmos::kRegB), 0x02);
  EXPECT_EQ(Get(RtcCmos::kRegC), 0x00);
  EXPECT_EQ(Get(RtcCmos::kRegD), 0x80);
  EXPECT_EQ(Get(RtcCmos::kSecondsAlarm), 0x00);
}

TEST_F(RtcCmosTest, ReadsTheTimeInBcd) {
  EXPECT_EQ(Time(), (Bytes{0x07, 0x45, 0x19, 0x01, 0x06, 0x12, 0x26, 0x20}));
}

TEST_F(RtcCmosTest, ReadsTheTimeInBinary) {
  Set(RtcCmos::kRegB, 0x06);
  EXPECT_EQ(Time(), (Bytes{7, 45, 19, 1, 6, 12, 26, 20}));
}

TEST_F(RtcCmosTest, TimeAdvancesWithTheClock) {
  At(53 * kSecond - 1);
  EXPECT_EQ(Time(), (Bytes{0x59, 0x45, 0x19, 0x01, 0x06, 0x12, 0x26, 0x20}));
  At(53 * kSecond);
  EXPECT_EQ(Time(), (Bytes{0x00, 0x46, 0x19, 0x01, 0x06, 0x12, 0x26, 0x20}));
  At(15'293 * kSecond);  // midnight, Monday
  EXPECT_EQ(Time(), (Bytes{0x00, 0x00, 0x00, 0x02, 0x07, 0x12, 0x26, 0x20}));
}

TEST_F(RtcCmosTest, UipReadsOneInTheLast244MicrosecondsOfASecond) {
  At(999'755'999);
  EXPECT_EQ(Get(RtcCmos::kRegA), 0x26);
  At(999'756'000);
  EXPECT_EQ(Get(RtcCmos::kRegA), 0xA6);
  At(999'999'999);
  EXPECT_EQ(Get(RtcCmos::kRegA), 0xA6);
  At(kSecond);
  EXPECT_EQ(Get(RtcCmos::kRegA), 0x26);
  At(2 * kSecond - 1);
  EXPECT_EQ(Get(RtcCmos::kRegA), 0xA6);
}

TEST_F(RtcCmosTest, UipReadsZeroWhileSet) {
  Set(RtcCmos::kRegB, 0x82);
  At(999'900'000);
  EXPECT_EQ(Get(RtcCmos::kRegA), 0x26);
}

TEST_F(RtcCmosTest, UipNeedsTheNormalDivider) {
  Set(RtcCmos::kRegA, 0x76);
  At(999'900'000);
  EXPECT_EQ(Get(RtcCmos::kRegA), 0x76);
}

TEST_F(RtcCmosTest, RegisterAKeepsBitsZeroToSix) {
  Set(RtcCmos::kRegA, 0xA5);
  EXPECT_EQ(Get(RtcCmos::kRegA), 0x25);
}

TEST_F(RtcCmosTest, SetBitTakesTheWrittenTimeWhenCleared) {
  At(kSecond / 2);
  Set(RtcCmos::kRegB, 0x82);
  // 2028-02-29 08:15:30, a Tuesday.
  Set(0x00, 0x30);
  Set(0x02, 0x15);
  Set(0x04, 0x08);
  Set(0x07, 0x29);
  Set(0x08, 0x02);
  Set(0x09, 0x28);
  At(10 * kSecond + kSecond / 2);  // the time stands still while SET
  EXPECT_EQ(Time(), (Bytes{0x30, 0x15, 0x08, 0x01, 0x29, 0x02, 0x28, 0x20}));
  Set(RtcCmos::kRegB, 0x02);
  EXPECT_EQ(Time(), (Bytes{0x30, 0x15, 0x08, 0x03, 0x29, 0x02, 0x28, 0x20}));
  At(11 * kSecond - 1);  // the fraction of the second was kept
  EXPECT_EQ(Get(0x00), 0x30);
  At(11 * kSecond);
  EXPECT_EQ(Get(0x00), 0x31);
  At(11 * kSecond + 86'400 * kSecond);
  EXPECT_EQ(Time(), (Bytes{0x31, 0x15, 0x08, 0x04, 0x01, 0x03, 0x28, 0x20}));
}

TEST_F(RtcCmosTest, SetTimeIsDecodedInTheModeItWasWrittenIn) {
  Set(RtcCmos::kRegB, 0x84);  // SET, binary, 12-hour
  Set(0x04, 0x81);            // 1 PM
  Set(RtcCmos::kRegB, 0x02);
  EXPECT_EQ(Get(0x04), 0x13);
}

TEST_F(RtcCmosTest, TimeByteWrittenWhileRunningSetsTheTime) {
  At(kSecond / 4);
  Set(0x02, 0x00);
  EXPECT_EQ(Time(), (Bytes{0x07, 0x00, 0x19, 0x01, 0x06, 0x12, 0x26, 0x20}));
  At(kSecond);
  EXPECT_EQ(Get(0x00), 0x08);
}

TEST_F(RtcCmosTest, DayAndMonthZeroCarryBack) {
  Set(RtcCmos::kRegB, 0x82);
  Set(0x07, 0x00);
  Set(0x08, 0x00);
  Set(0x09, 0x27);
  Set(RtcCmos::kRegB, 0x02);
  // 2027-00-00 is 2026-11-30, a Monday.
  EXPECT_EQ(Time(), (Bytes{0x07, 0x45, 0x19, 0x02, 0x30, 0x11, 0x26, 0x20}));
}

TEST_F(RtcCmosTest, InvalidBcdCarriesOverAndClampsAtTheEndOf9999) {
  Set(RtcCmos::kRegB, 0x82);
  Set(0x00, 0x7A);  // "80" seconds
  Set(0x02, 0x59);
  Set(0x04, 0x23);
  Set(0x07, 0x31);
  Set(0x08, 0x12);
  Set(0x09, 0x99);
  Set(0x32, 0x99);
  Set(RtcCmos::kRegB, 0x02);
  // 9999-12-31 23:59:80 is past the last second the RTC can show (a Friday).
  const Bytes last{0x59, 0x59, 0x23, 0x06, 0x31, 0x12, 0x99, 0x99};
  EXPECT_EQ(Time(), last);
  At(5 * kSecond);
  EXPECT_EQ(Time(), last);
}

TEST_F(RtcCmosTest, AllOnesInBinaryDoNotBreakTheClock) {
  Set(RtcCmos::kRegB, 0x86);
  for (uint8_t index : {0x00, 0x02, 0x04, 0x06, 0x07, 0x08, 0x09, 0x32}) Set(index, 0xFF);
  EXPECT_EQ(Get(0x00), 0xFF);  // read back as written while SET
  Set(RtcCmos::kRegB, 0x06);
  EXPECT_EQ(Time(), (Bytes{59, 59, 23, 6, 31, 12, 99, 99}));
}

TEST_F(RtcCmosTest, RegisterCReportsUpdatesAndClearsOnRead) {
  At(kSecond - 1);
  EXPECT_EQ(Get(RtcCmos::kRegC), 0x00);
  At(kSecond);
  EXPECT_EQ(Get(RtcCmos::kRegC), 0x10);
  EXPECT_EQ(Get(RtcCmos::kRegC), 0x00);
  Set(RtcCmos::kRegB, 0x12);  // UIE
  At(3 * kSecond);
  EXPECT_EQ(Get(RtcCmos::kRegC), 0x90);
  EXPECT_EQ(Get(RtcCmos::kRegC), 0x00);
}

TEST_F(RtcCmosTest, AlarmFlagWithDontCareHoursAndMinutes) {
  Set(RtcCmos::kRegB, 0x22);  // AIE
  SetAlarm(0xC0, 0xFF, 0x10);
  At(2 * kSecond);  // 19:45:09
  EXPECT_EQ(Get(RtcCmos::kRegC), 0x10);
  At(3 * kSecond);  // 19:45:10
  EXPECT_EQ(Get(RtcCmos::kRegC), 0xB0);
  EXPECT_EQ(Get(RtcCmos::kRegC), 0x00);
  At(62 * kSecond);  // 19:46:09
  EXPECT_EQ(Get(RtcCmos::kRegC), 0x10);
  At(200 * kSecond);  // 19:48:27: 19:46:10 and 19:47:10 passed unread
  EXPECT_EQ(Get(RtcCmos::kRegC), 0xB0);
}

TEST_F(RtcCmosTest, AlarmFlagWithoutAieSetsNoIrqf) {
  SetAlarm(0xFF, 0xFF, 0xFF);
  At(kSecond);
  EXPECT_EQ(Get(RtcCmos::kRegC), 0x30);
}

TEST_F(RtcCmosTest, NoUpdateOrAlarmWhileSet) {
  SetAlarm(0xFF, 0xFF, 0xFF);
  Set(RtcCmos::kRegB, 0xA2);
  At(5 * kSecond);
  EXPECT_EQ(Get(RtcCmos::kRegC), 0x00);
}

TEST_F(RtcCmosTest, RaiseAlarmSetsAfAndIrqfWithAie) {
  rtc_.RaiseAlarm();
  EXPECT_EQ(Get(RtcCmos::kRegC), 0x20);
  Set(RtcCmos::kRegB, 0x22);
  rtc_.RaiseAlarm();
  EXPECT_EQ(Get(RtcCmos::kRegC), 0xA0);
  EXPECT_EQ(Get(RtcCmos::kRegC), 0x00);
}

TEST_F(RtcCmosTest, NextAlarmEverySecond) {
  Set(RtcCmos::kRegB, 0x22);
  SetAlarm(0xFF, 0xC0, 0xC0);
  EXPECT_EQ(rtc_.NextAlarmNs(), kStartNs + kSecond);  // strictly after now
  At(kSecond / 4);
  EXPECT_EQ(rtc_.NextAlarmNs(), kStartNs + kSecond);
  At(kSecond);
  EXPECT_EQ(rtc_.NextAlarmNs(), kStartNs + 2 * kSecond);
}

TEST_F(RtcCmosTest, NextAlarmAtASpecificMinute) {
  Set(RtcCmos::kRegB, 0x22);
  SetAlarm(0xC0, 0x50, 0x00);  // 19:50:00, 293 s ahead
  EXPECT_EQ(rtc_.NextAlarmNs(), kStartNs + 293 * kSecond);
  At(293 * kSecond);  // at it: the next one is an hour on
  EXPECT_EQ(rtc_.NextAlarmNs(), kStartNs + (293 + 3600) * kSecond);
}

TEST_F(RtcCmosTest, NextAlarmLooksADayAhead) {
  Set(RtcCmos::kRegB, 0x22);
  SetAlarm(0x19, 0x45, 0x07);  // now
  At(kSecond / 2);
  EXPECT_EQ(rtc_.NextAlarmNs(), kStartNs + 86'400 * kSecond);
}

TEST_F(RtcCmosTest, NoNextAlarmWithoutAie) {
  SetAlarm(0xFF, 0xFF, 0xFF);
  EXPECT_EQ(rtc_.NextAlarmNs(), std::nullopt);
}

TEST_F(RtcCmosTest, NoNextAlarmForAnImpossibleTimeOrWhileSet) {
  Set(RtcCmos::kRegB, 0x22);
  SetAlarm(0xFF, 0xFF, 0x60);  // second 60 in BCD never comes
  EXPECT_EQ(rtc_.NextAlarmNs(), std::nullopt);
  SetAlarm(0xFF, 0xFF, 0xFF);
  Set(RtcCmos::kRegB, 0xA2);
  EXPECT_EQ(rtc_.NextAlarmNs(), std::nullopt);
}

TEST_F(RtcCmosTest, TwelveHourModeReadsPmInBitSeven) {
  Set(RtcCmos::kRegB, 0x00);   // BCD, 12-hour
  EXPECT_EQ(Get(0x04), 0x87);  // 7 PM
  At(15'293 * kSecond);        // midnight is 12 AM
  EXPECT_EQ(Get(0x04), 0x12);
  At((15'293 + 12 * 3600) * kSecond);  // noon is 12 PM
  EXPECT_EQ(Get(0x04), 0x92);
  Set(RtcCmos::kRegB, 0x04);  // binary, 12-hour
  EXPECT_EQ(Get(0x04), 0x8C);
}

TEST_F(RtcCmosTest, TwelveHourAlarmMatchesPmHours) {
  Set(RtcCmos::kRegB, 0x20);  // AIE, BCD, 12-hour
  SetAlarm(0x87, 0x50, 0x00);
  EXPECT_EQ(rtc_.NextAlarmNs(), kStartNs + 293 * kSecond);
  SetAlarm(0x07, 0x50, 0x00);  // 7:50 AM
  EXPECT_EQ(rtc_.NextAlarmNs(), kStartNs + (293 + 12 * 3600) * kSecond);
}

TEST_F(RtcCmosTest, RamComesFromConfigOutsideTheClock) {
  RtcCmos::Config config = MakeConfig();
  config.ram[0x00] = 0x55;  // the clock's: ignored
  config.ram[0x01] = 0x77;
  config.ram[0x0E] = 0x01;
  config.ram[0x32] = 0x99;
  config.ram[0x34] = 0x12;
  config.ram[0x7F] = 0x5A;
  RtcCmos rtc(std::move(config));
  EXPECT_EQ(Get(rtc, 0x00), 0x07);
  EXPECT_EQ(Get(rtc, 0x01), 0x00);
  EXPECT_EQ(Get(rtc, 0x0E), 0x01);
  EXPECT_EQ(Get(rtc, 0x32), 0x20);
  EXPECT_EQ(Get(rtc, 0x34), 0x12);
  EXPECT_EQ(Get(rtc, 0x7F), 0x5A);
  EXPECT_EQ(Get(rtc, 0x40), 0x00);
}

TEST_F(RtcCmosTest, RamReadsWhatWasWritten) {
  Set(0x40, 0x3C);
  Set(0x7F, 0xC3);
  EXPECT_EQ(Get(0x40), 0x3C);
  EXPECT_EQ(Get(0x7F), 0xC3);
}

TEST_F(RtcCmosTest, IndexBitSevenIsTheNmiMask) {
  Out(rtc_, RtcCmos::kIndexOffset, 0x8E);
  EXPECT_TRUE(rtc_.nmi_masked());
  EXPECT_EQ(rtc_.index(), 0x0E);
  Set(0x0E, 0x42);  // selects 0x0E again, unmasked
  EXPECT_FALSE(rtc_.nmi_masked());
  Out(rtc_, RtcCmos::kIndexOffset, 0x8E);
  uint8_t data[1] = {0};
  rtc_.Read(RtcCmos::kDataOffset, data, vm_.exit);
  EXPECT_EQ(data[0], 0x42);
}

TEST_F(RtcCmosTest, IndexReadsAllOnesAndIsCounted) {
  uint8_t data[1] = {0};
  rtc_.Read(RtcCmos::kIndexOffset, data, vm_.exit);
  EXPECT_EQ(data[0], 0xFF);
  EXPECT_EQ(rtc_.ignored_accesses(), 1u);
}

TEST_F(RtcCmosTest, WideAccessesAreIgnoredAndCounted) {
  Out(rtc_, RtcCmos::kIndexOffset, 0x40);
  const uint8_t wide[2] = {0x10, 0x99};
  rtc_.Write(RtcCmos::kIndexOffset, wide, vm_.exit);
  rtc_.Write(RtcCmos::kDataOffset, wide, vm_.exit);
  std::vector<uint8_t> data(4, 0);
  rtc_.Read(RtcCmos::kIndexOffset, data, vm_.exit);
  EXPECT_EQ(data, (Bytes{0xFF, 0xFF, 0xFF, 0xFF}));
  EXPECT_EQ(rtc_.ignored_accesses(), 3u);
  EXPECT_EQ(rtc_.index(), 0x40);
  EXPECT_EQ(Get(0x40), 0x00);
  EXPECT_EQ(rtc_.ignored_accesses(), 3u);
}

TEST_F(RtcCmosTest, RegistersCAndDIgnoreWrites) {
  rtc_.RaiseAlarm();
  Set(RtcCmos::kRegC, 0x00);
  Set(RtcCmos::kRegD, 0x00);
  EXPECT_EQ(rtc_.ignored_accesses(), 2u);
  EXPECT_EQ(Get(RtcCmos::kRegC), 0x20);
  EXPECT_EQ(Get(RtcCmos::kRegD), 0x80);
}

TEST_F(RtcCmosTest, DefaultClocksAreUsable) {
  const uint64_t first = RtcCmos::MonotonicNs();
  EXPECT_GE(RtcCmos::MonotonicNs(), first);
  EXPECT_GT(RtcCmos::WallSeconds(), 1'700'000'000);  // after November 2023
  RtcCmos::Config config;
  config.clock = nullptr;  // falls back to MonotonicNs
  RtcCmos rtc(std::move(config));
  EXPECT_EQ(Get(rtc, RtcCmos::kCentury), 0x19);  // 1970
}

}  // namespace
}  // namespace rtc_cmos_test
}  // namespace minivmm
