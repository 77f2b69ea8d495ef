#include "vmm/memory/guest_memory.h"

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace minivmm {
namespace {

constexpr uint64_t kRamSize = 0x1000;

class GuestMemoryTest : public ::testing::Test {
 protected:
  GuestMemoryTest() : ram_(kRamSize, 0x5A), memory_(ram_) {}

  std::vector<uint8_t> ram_;
  GuestMemory memory_;
};

TEST_F(GuestMemoryTest, ReadObjInsideRamReturnsValue) {
  ram_[0x10] = 0x11;
  ram_[0x11] = 0x22;
  absl::StatusOr<uint16_t> value = memory_.ReadObj<uint16_t>(GuestAddress(0x10));
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, 0x2211);
}

TEST_F(GuestMemoryTest, ReadObjEndingExactlyAtEndSucceeds) {
  EXPECT_TRUE(memory_.ReadObj<uint64_t>(GuestAddress(kRamSize - 8)).ok());
}

TEST_F(GuestMemoryTest, ReadObjStraddlingEndIsOutOfRange) {
  EXPECT_EQ(memory_.ReadObj<uint64_t>(GuestAddress(kRamSize - 7)).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST_F(GuestMemoryTest, ReadObjPastEndIsOutOfRange) {
  EXPECT_EQ(memory_.ReadObj<uint32_t>(GuestAddress(kRamSize)).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST_F(GuestMemoryTest, ReadObjAtTopOfAddressSpaceIsOutOfRange) {
  EXPECT_EQ(memory_.ReadObj<uint64_t>(GuestAddress(UINT64_MAX - 3)).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST_F(GuestMemoryTest, AddressPlusLengthOverflowIsOutOfRange) {
  // gpa + len wraps to 0x10, which a naive end check would accept.
  EXPECT_EQ(memory_.GetSpan(GuestAddress(0x20), UINT64_MAX - 0xF).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_FALSE(memory_.Contains(GuestAddress(0x20), UINT64_MAX - 0xF));
}

TEST_F(GuestMemoryTest, ZeroLengthAtEndIsInside) {
  absl::StatusOr<std::span<uint8_t>> span = memory_.GetSpan(GuestAddress(kRamSize), 0);
  ASSERT_TRUE(span.ok()) << span.status();
  EXPECT_TRUE(span->empty());
}

TEST_F(GuestMemoryTest, ZeroLengthPastEndIsOutOfRange) {
  EXPECT_EQ(memory_.GetSpan(GuestAddress(kRamSize + 1), 0).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST_F(GuestMemoryTest, WholeRamSpanIsInside) {
  absl::StatusOr<std::span<uint8_t>> span = memory_.GetSpan(GuestAddress(0), kRamSize);
  ASSERT_TRUE(span.ok()) << span.status();
  EXPECT_EQ(span->data(), ram_.data());
  EXPECT_EQ(span->size(), kRamSize);
}

TEST_F(GuestMemoryTest, OneByteMoreThanRamIsOutOfRange) {
  EXPECT_EQ(memory_.GetSpan(GuestAddress(0), kRamSize + 1).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST_F(GuestMemoryTest, WriteObjThenReadObjRoundTrips) {
  ASSERT_TRUE(memory_.WriteObj<uint32_t>(GuestAddress(0x100), 0xDEADBEEF).ok());
  EXPECT_EQ(*memory_.ReadObj<uint32_t>(GuestAddress(0x100)), 0xDEADBEEF);
  EXPECT_EQ(ram_[0x100], 0xEF);  // little-endian, in place
}

TEST_F(GuestMemoryTest, WriteStraddlingEndLeavesMemoryUntouched) {
  const std::vector<uint8_t> data(16, 0xFF);
  EXPECT_EQ(memory_.Write(GuestAddress(kRamSize - 8), data).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ram_, std::vector<uint8_t>(kRamSize, 0x5A));
}

TEST_F(GuestMemoryTest, ReadOnErrorLeavesOutputUntouched) {
  std::vector<uint8_t> out(16, 0x77);
  EXPECT_EQ(memory_.Read(GuestAddress(kRamSize - 8), out).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(out, std::vector<uint8_t>(16, 0x77));
}

TEST(GuestMemoryEmptyTest, EmptyRamHoldsOnlyZeroLengthAtZero) {
  GuestMemory memory({});
  EXPECT_TRUE(memory.GetSpan(GuestAddress(0), 0).ok());
  EXPECT_EQ(memory.ReadObj<uint8_t>(GuestAddress(0)).status().code(),
            absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace minivmm
