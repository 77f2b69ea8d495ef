#include "vmm/bus/bus.h"

#include <cstdint>
#include <deque>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "minivmm/exit_stats.h"

namespace minivmm {
namespace {

using ::testing::HasSubstr;

class NamedDevice final : public IoDevice {
 public:
  explicit NamedDevice(std::string name) : name_(std::move(name)) {}
  std::string_view Name() const override { return name_; }
  void Read(uint64_t, std::span<uint8_t>, ExitContext&) override {}
  void Write(uint64_t, std::span<const uint8_t>, ExitContext&) override {}

 private:
  std::string name_;
};

class BusTest : public ::testing::Test {
 protected:
  Bus bus_{"pio"};
  NamedDevice uart_{"uart"};
  NamedDevice exit_{"debug-exit"};
  NamedDevice other_{"other"};
};

// --- registration ---

TEST_F(BusTest, IndexesFollowRegistrationOrder) {
  EXPECT_EQ(*bus_.Register(0x3F8, 8, &uart_), 0);
  EXPECT_EQ(*bus_.Register(0xF4, 4, &exit_), 1);  // lower address, later index
  EXPECT_EQ(bus_.device_count(), 2);
}

TEST_F(BusTest, ZeroLengthIsRefused) {
  EXPECT_EQ(bus_.Register(0x3F8, 0, &uart_).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(BusTest, NullDeviceIsRefused) {
  EXPECT_EQ(bus_.Register(0x3F8, 8, nullptr).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(BusTest, RangePastTopOfAddressSpaceIsRefused) {
  EXPECT_EQ(bus_.Register(UINT64_MAX - 3, 5, &uart_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(BusTest, RangeEndingAtTopOfAddressSpaceIsAccepted) {
  ASSERT_TRUE(bus_.Register(UINT64_MAX - 3, 4, &uart_).ok());
  EXPECT_TRUE(bus_.Find(UINT64_MAX, 1).has_value());
}

TEST_F(BusTest, AdjacentRangesAreAccepted) {
  ASSERT_TRUE(bus_.Register(0x10, 0x10, &uart_).ok());
  EXPECT_TRUE(bus_.Register(0x20, 0x10, &exit_).ok());   // right after
  EXPECT_TRUE(bus_.Register(0x00, 0x10, &other_).ok());  // right before
}

TEST_F(BusTest, IdenticalRangeIsRefused) {
  ASSERT_TRUE(bus_.Register(0x3F8, 8, &uart_).ok());
  EXPECT_EQ(bus_.Register(0x3F8, 8, &other_).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(BusTest, ContainedRangeIsRefused) {
  ASSERT_TRUE(bus_.Register(0x3F8, 8, &uart_).ok());
  EXPECT_EQ(bus_.Register(0x3FA, 2, &other_).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(BusTest, ContainingRangeIsRefused) {
  ASSERT_TRUE(bus_.Register(0x3F8, 8, &uart_).ok());
  EXPECT_EQ(bus_.Register(0x300, 0x200, &other_).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(BusTest, RangeStraddlingStartIsRefused) {
  ASSERT_TRUE(bus_.Register(0x3F8, 8, &uart_).ok());
  EXPECT_EQ(bus_.Register(0x3F0, 9, &other_).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(BusTest, RangeStraddlingEndIsRefused) {
  ASSERT_TRUE(bus_.Register(0x3F8, 8, &uart_).ok());
  EXPECT_EQ(bus_.Register(0x3FF, 2, &other_).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(BusTest, RangeBridgingTwoDevicesIsRefused) {
  ASSERT_TRUE(bus_.Register(0x10, 0x10, &uart_).ok());
  ASSERT_TRUE(bus_.Register(0x30, 0x10, &exit_).ok());
  EXPECT_EQ(bus_.Register(0x1F, 0x12, &other_).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(BusTest, OverlapErrorNamesBothDevices) {
  ASSERT_TRUE(bus_.Register(0x3F8, 8, &uart_).ok());
  absl::Status status = bus_.Register(0x3FC, 1, &other_).status();
  EXPECT_THAT(status.message(), HasSubstr("'uart'"));
  EXPECT_THAT(status.message(), HasSubstr("'other'"));
}

TEST_F(BusTest, RefusedRegistrationChangesNothing) {
  ASSERT_TRUE(bus_.Register(0x3F8, 8, &uart_).ok());
  ASSERT_FALSE(bus_.Register(0x3F0, 0x10, &other_).ok());
  EXPECT_EQ(bus_.device_count(), 1);
  EXPECT_FALSE(bus_.Find(0x3F0, 1).has_value());
  EXPECT_EQ(*bus_.Register(0xF4, 4, &exit_), 1);
}

TEST_F(BusTest, MoreThanMaxDevicesIsResourceExhausted) {
  std::deque<NamedDevice> devices;
  for (int i = 0; i < kMaxBusDevices; ++i) {
    devices.emplace_back("dev" + std::to_string(i));
    ASSERT_EQ(*bus_.Register(0x100 + i, 1, &devices.back()), i);
  }
  EXPECT_EQ(bus_.Register(0x1000, 1, &other_).status().code(),
            absl::StatusCode::kResourceExhausted);
}

// --- lookup ---

TEST_F(BusTest, FindReturnsDeviceOffsetAndIndex) {
  ASSERT_TRUE(bus_.Register(0xF4, 4, &exit_).ok());
  ASSERT_TRUE(bus_.Register(0x3F8, 8, &uart_).ok());
  std::optional<BusMatch> match = bus_.Find(0x3FD, 1);
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->device, &uart_);
  EXPECT_EQ(match->offset, 5u);
  EXPECT_EQ(match->index, 1);
}

TEST_F(BusTest, FirstAndLastBytesAreClaimed) {
  ASSERT_TRUE(bus_.Register(0x3F8, 8, &uart_).ok());
  EXPECT_EQ(bus_.Find(0x3F8, 1)->offset, 0u);
  EXPECT_EQ(bus_.Find(0x3FF, 1)->offset, 7u);
  EXPECT_EQ(bus_.Find(0x3F8, 8)->offset, 0u);  // the whole range at once
}

TEST_F(BusTest, BytesJustOutsideAreUnclaimed) {
  ASSERT_TRUE(bus_.Register(0x3F8, 8, &uart_).ok());
  EXPECT_FALSE(bus_.Find(0x3F7, 1).has_value());
  EXPECT_FALSE(bus_.Find(0x400, 1).has_value());
}

TEST_F(BusTest, AccessStraddlingDeviceEndIsUnclaimed) {
  ASSERT_TRUE(bus_.Register(0x3F8, 8, &uart_).ok());
  EXPECT_FALSE(bus_.Find(0x3FE, 4).has_value());
}

TEST_F(BusTest, AccessStraddlingDeviceStartIsUnclaimed) {
  ASSERT_TRUE(bus_.Register(0x3F8, 8, &uart_).ok());
  EXPECT_FALSE(bus_.Find(0x3F6, 4).has_value());
}

TEST_F(BusTest, AccessAcrossTwoAdjacentDevicesIsUnclaimed) {
  ASSERT_TRUE(bus_.Register(0x10, 4, &uart_).ok());
  ASSERT_TRUE(bus_.Register(0x14, 4, &exit_).ok());
  EXPECT_FALSE(bus_.Find(0x12, 4).has_value());
  EXPECT_EQ(bus_.Find(0x14, 4)->device, &exit_);
}

TEST_F(BusTest, ZeroSizeAccessIsUnclaimed) {
  ASSERT_TRUE(bus_.Register(0x3F8, 8, &uart_).ok());
  EXPECT_FALSE(bus_.Find(0x3F8, 0).has_value());
}

TEST_F(BusTest, WrappingAccessIsUnclaimed) {
  ASSERT_TRUE(bus_.Register(0, 0x10, &uart_).ok());
  EXPECT_FALSE(bus_.Find(UINT64_MAX, 2).has_value());
}

TEST_F(BusTest, EmptyBusClaimsNothing) {
  EXPECT_FALSE(bus_.Find(0, 1).has_value());
  EXPECT_EQ(bus_.device_count(), 0);
}

TEST_F(BusTest, DeviceNameByIndex) {
  ASSERT_TRUE(bus_.Register(0x3F8, 8, &uart_).ok());
  ASSERT_TRUE(bus_.Register(0xF4, 4, &exit_).ok());
  EXPECT_EQ(bus_.DeviceName(0), "uart");
  EXPECT_EQ(bus_.DeviceName(1), "debug-exit");
}

TEST_F(BusTest, DeviceNameOfUnknownIndexIsEmpty) {
  ASSERT_TRUE(bus_.Register(0x3F8, 8, &uart_).ok());
  EXPECT_EQ(bus_.DeviceName(1), "");
  EXPECT_EQ(bus_.DeviceName(-1), "");
}

}  // namespace
}  // namespace minivmm
