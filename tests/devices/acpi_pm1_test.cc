#include "devices/acpi_pm1.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tests/common/device_access.h"
#include "tests/common/fake_vm.h"

namespace minivmm {
namespace {

class RecordingSleeper final : public AcpiSleeper {
 public:
  void Sleep(uint8_t slp_typ, ExitContext& ctx) override { asked.push_back(slp_typ); }
  std::vector<uint8_t> asked;
};

class AcpiPm1Test : public ::testing::Test {
 protected:
  uint32_t In(IoDevice& d, uint64_t offset, size_t size) {
    return static_cast<uint32_t>(testing::ReadLe(d, offset, size, vm_.exit));
  }
  void Out(IoDevice& d, uint64_t offset, size_t size, uint32_t value) {
    testing::WriteLe(d, offset, size, value, vm_.exit);
  }

  testing::FakeVm vm_;
  RecordingSleeper sleeper_;
  AcpiPm1 pm1_{&sleeper_};
};

TEST_F(AcpiPm1Test, Names) {
  EXPECT_EQ(pm1_.events.Name(), "acpi-pm1-evt");
  EXPECT_EQ(pm1_.control.Name(), "acpi-pm1-cnt");
}

TEST_F(AcpiPm1Test, StatusIsWriteOneToClear) {
  EXPECT_EQ(In(pm1_.events, 0, 2), 0u);
  pm1_.Wake(/*by_rtc=*/true);
  EXPECT_EQ(In(pm1_.events, 0, 2), 0x8400u);
  Out(pm1_.events, 0, 2, 0x0400);  // RTC_STS only
  EXPECT_EQ(In(pm1_.events, 0, 2), 0x8000u);
  Out(pm1_.events, 0, 2, 0);  // zeros change nothing
  EXPECT_EQ(In(pm1_.events, 0, 2), 0x8000u);
  Out(pm1_.events, 1, 1, 0x80);  // the high byte alone
  EXPECT_EQ(In(pm1_.events, 0, 4), 0u);
  pm1_.Wake(/*by_rtc=*/false);
  EXPECT_EQ(In(pm1_.events, 0, 2), 0x8000u);
}

TEST_F(AcpiPm1Test, EnableKeepsOnlyItsBits) {
  Out(pm1_.events, 2, 2, 0xFFFF);
  EXPECT_EQ(In(pm1_.events, 2, 2), uint32_t{kPm1EnableBits});
  EXPECT_EQ(kPm1EnableBits, 0x0721);
  EXPECT_TRUE(pm1_.rtc_wake_enabled());
  Out(pm1_.events, 3, 1, 0x00);
  EXPECT_FALSE(pm1_.rtc_wake_enabled());
  EXPECT_EQ(In(pm1_.events, 0, 4), 0x00210000u);  // a 4-byte read: status, then enable
}

TEST_F(AcpiPm1Test, ControlReadsSciEnAndKeepsSleepType) {
  EXPECT_EQ(In(pm1_.control, 0, 2), 1u);
  Out(pm1_.control, 0, 2, 0x1C06);  // SLP_TYP 7, BM_RLD, GBL_RLS: no SLP_EN
  EXPECT_EQ(In(pm1_.control, 0, 2), 0x1C03u);
  EXPECT_TRUE(sleeper_.asked.empty());
  EXPECT_EQ(pm1_.control.sleeps(), 0u);
}

TEST_F(AcpiPm1Test, SlpEnAsksForTheSleepType) {
  Out(pm1_.control, 0, 2, 0x2400);  // kvm-unit-tests' s3: SLP_EN | SLP_TYP 1
  Out(pm1_.control, 1, 1, 0x20);    // the high byte alone: SLP_TYP 0
  Out(pm1_.control, 0, 1, 0xFF);    // the low byte cannot set SLP_EN
  EXPECT_EQ(sleeper_.asked, (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(pm1_.control.sleeps(), 2u);
  EXPECT_EQ(In(pm1_.control, 0, 2) & kPm1SlpEn, 0u);  // write-only
}

}  // namespace
}  // namespace minivmm
