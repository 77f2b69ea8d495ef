#include "minivmm/guest_memory.h"

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "gtest/gtest.h"

namespace minivmm {
// A namespace of the file's own: the test binaries are unity builds.
namespace guest_memory_test {
namespace {

constexpr uint64_t kRamSize = 0x1000;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

struct Pair {
  uint32_t a;
  uint16_t b;
  bool operator==(const Pair&) const = default;
};

// No default constructor: ReadObj must not need one.
struct NoDefault {
  explicit NoDefault(uint32_t v) : value(v) {}
  uint32_t value;
};

class GuestMemoryTest : public ::testing::Test {
 protected:
  GuestMemoryTest() : ram_(kRamSize, 0x5A), memory_(ram_) {}

  bool RamUntouched() const { return ram_ == std::vector<uint8_t>(kRamSize, 0x5A); }

  std::vector<uint8_t> ram_;
  GuestMemory memory_;
};

TEST_F(GuestMemoryTest, ReadObjInsideRamReturnsValue) {
  ram_[0x10] = 0x11;
  ram_[0x11] = 0x22;
  const std::optional<uint16_t> value = memory_.ReadObj<uint16_t>(GuestAddress(0x10));
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(*value, 0x2211);
}

TEST_F(GuestMemoryTest, ReadObjOfATypeWithoutDefaultConstructor) {
  ASSERT_TRUE(memory_.WriteObj(GuestAddress(0x20), NoDefault(0x01020304)));
  const std::optional<NoDefault> value = memory_.ReadObj<NoDefault>(GuestAddress(0x20));
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(value->value, 0x01020304u);
}

TEST_F(GuestMemoryTest, ReadObjEndingExactlyAtEndSucceeds) {
  EXPECT_TRUE(memory_.ReadObj<uint64_t>(GuestAddress(kRamSize - 8)).has_value());
}

// End outside: the range starts inside RAM and runs past its end.
TEST_F(GuestMemoryTest, ReadObjStraddlingEndIsRefused) {
  EXPECT_FALSE(memory_.ReadObj<uint64_t>(GuestAddress(kRamSize - 7)).has_value());
}

// Start outside: the range starts at or past the end of RAM.
TEST_F(GuestMemoryTest, ReadObjPastEndIsRefused) {
  EXPECT_FALSE(memory_.ReadObj<uint32_t>(GuestAddress(kRamSize)).has_value());
  EXPECT_FALSE(memory_.ReadObj<uint8_t>(GuestAddress(kRamSize + 1)).has_value());
}

TEST_F(GuestMemoryTest, ReadObjAtTopOfAddressSpaceIsRefused) {
  EXPECT_FALSE(memory_.ReadObj<uint64_t>(GuestAddress(kMax - 3)).has_value());
  EXPECT_FALSE(memory_.WriteObj<uint64_t>(GuestAddress(kMax - 3), 1));
}

TEST_F(GuestMemoryTest, AddressPlusLengthOverflowIsRefused) {
  // gpa + len wraps to 0x10, which a naive end check would accept.
  EXPECT_FALSE(memory_.GetSpan(GuestAddress(0x20), kMax - 0xF).has_value());
  EXPECT_FALSE(memory_.Contains(GuestAddress(0x20), kMax - 0xF));
}

TEST_F(GuestMemoryTest, ZeroLengthAtEndIsInside) {
  const std::optional<std::span<uint8_t>> span = memory_.GetSpan(GuestAddress(kRamSize), 0);
  ASSERT_TRUE(span.has_value());
  EXPECT_TRUE(span->empty());
  std::array<uint8_t, 0> none;
  EXPECT_TRUE(memory_.Read(GuestAddress(kRamSize), std::span(none)));
  EXPECT_TRUE(memory_.Write(GuestAddress(kRamSize), std::span<const uint8_t>()));
  EXPECT_TRUE(memory_.Read(GuestAddress(kRamSize), std::span<uint64_t>()));
  EXPECT_TRUE(RamUntouched());
}

TEST_F(GuestMemoryTest, ZeroLengthPastEndIsRefused) {
  EXPECT_FALSE(memory_.GetSpan(GuestAddress(kRamSize + 1), 0).has_value());
  EXPECT_FALSE(memory_.Read(GuestAddress(kRamSize + 1), std::span<uint8_t>()));
  EXPECT_FALSE(memory_.Write(GuestAddress(kMax), std::span<const uint32_t>()));
}

TEST_F(GuestMemoryTest, WholeRamSpanIsInside) {
  const std::optional<std::span<uint8_t>> span = memory_.GetSpan(GuestAddress(0), kRamSize);
  ASSERT_TRUE(span.has_value());
  EXPECT_EQ(span->data(), ram_.data());
  EXPECT_EQ(span->size(), kRamSize);
}

TEST_F(GuestMemoryTest, OneByteMoreThanRamIsRefused) {
  EXPECT_FALSE(memory_.GetSpan(GuestAddress(0), kRamSize + 1).has_value());
  EXPECT_FALSE(memory_.GetSpan(GuestAddress(1), kRamSize).has_value());
}

TEST_F(GuestMemoryTest, WriteObjThenReadObjRoundTrips) {
  ASSERT_TRUE(memory_.WriteObj<uint32_t>(GuestAddress(0x100), 0xDEADBEEF));
  EXPECT_EQ(memory_.ReadObj<uint32_t>(GuestAddress(0x100)), 0xDEADBEEF);
  EXPECT_EQ(ram_[0x100], 0xEF);  // little-endian, in place
}

TEST_F(GuestMemoryTest, TypedSpansRoundTripElementByElement) {
  const std::array<Pair, 3> in = {Pair{1, 2}, Pair{3, 4}, Pair{5, 6}};
  ASSERT_TRUE(memory_.Write(GuestAddress(0x200), std::span(in)));
  std::array<Pair, 3> out{};
  ASSERT_TRUE(memory_.Read(GuestAddress(0x200), std::span(out)));
  EXPECT_EQ(out, in);
  // Element i is at gpa + i * sizeof(T), as in the guest's array.
  EXPECT_EQ(memory_.ReadObj<uint32_t>(GuestAddress(0x200 + 2 * sizeof(Pair))), 5u);
}

TEST_F(GuestMemoryTest, TypedSpanEndingExactlyAtEndIsInside) {
  std::array<uint64_t, 4> out{};
  EXPECT_TRUE(memory_.Read(GuestAddress(kRamSize - 32), std::span(out)));
  EXPECT_EQ(out[3], 0x5A5A5A5A5A5A5A5Au);
  EXPECT_TRUE(memory_.ContainsArray<uint64_t>(GuestAddress(kRamSize - 32), 4));
}

TEST_F(GuestMemoryTest, TypedSpanCrossingEndIsRefusedAndCopiesNothing) {
  std::array<uint64_t, 4> out;
  out.fill(7);
  EXPECT_FALSE(memory_.Read(GuestAddress(kRamSize - 24), std::span(out)));  // last element outside
  EXPECT_EQ(out, (std::array<uint64_t, 4>{7, 7, 7, 7}));
  EXPECT_FALSE(memory_.Write(GuestAddress(kRamSize - 24), std::span<const uint64_t>(out)));
  EXPECT_TRUE(RamUntouched());
  EXPECT_FALSE(memory_.ContainsArray<uint64_t>(GuestAddress(kRamSize - 24), 4));
}

TEST_F(GuestMemoryTest, TypedSpanWhoseByteLengthOverflowsIsRefused) {
  // (2^61 + 1) * 8 bytes wraps to 8: a check on the wrapped byte length
  // would accept it and copy 8 bytes. The span is never dereferenced.
  std::array<uint64_t, 1> storage = {7};
  const uint64_t wrapping_count = (uint64_t{1} << 61) + 1;
  EXPECT_FALSE(memory_.ContainsArray<uint64_t>(GuestAddress(0), wrapping_count));
  EXPECT_FALSE(memory_.Read(GuestAddress(0), std::span<uint64_t>(storage.data(), wrapping_count)));
  EXPECT_FALSE(
      memory_.Write(GuestAddress(0), std::span<const uint64_t>(storage.data(), wrapping_count)));
  EXPECT_EQ(storage[0], 7u);
  EXPECT_TRUE(RamUntouched());
  // 3-byte elements: count * 3 wraps for count > (2^64 - 1) / 3.
  struct Three {
    uint8_t b[3];
  };
  EXPECT_FALSE(memory_.ContainsArray<Three>(GuestAddress(0), kMax / 3 + 1));
  EXPECT_TRUE(memory_.ContainsArray<Three>(GuestAddress(0), kRamSize / 3));
}

TEST_F(GuestMemoryTest, WriteStraddlingEndLeavesMemoryUntouched) {
  const std::vector<uint8_t> data(16, 0xFF);
  EXPECT_FALSE(memory_.Write(GuestAddress(kRamSize - 8), std::span(data)));
  EXPECT_TRUE(RamUntouched());
}

TEST_F(GuestMemoryTest, ReadOnRefusalLeavesOutputUntouched) {
  std::vector<uint8_t> out(16, 0x77);
  EXPECT_FALSE(memory_.Read(GuestAddress(kRamSize - 8), std::span(out)));
  EXPECT_EQ(out, std::vector<uint8_t>(16, 0x77));
}

TEST_F(GuestMemoryTest, CharSpansReadText) {
  ram_[0x300] = 'h';
  ram_[0x301] = 'i';
  std::array<char, 2> text;
  ASSERT_TRUE(memory_.Read(GuestAddress(0x300), std::span(text)));
  EXPECT_EQ(text[0], 'h');
  EXPECT_EQ(text[1], 'i');
}

TEST(GuestMemoryEmptyTest, EmptyRamHoldsOnlyZeroLengthAtZero) {
  GuestMemory memory({});
  EXPECT_TRUE(memory.GetSpan(GuestAddress(0), 0).has_value());
  EXPECT_FALSE(memory.GetSpan(GuestAddress(1), 0).has_value());
  EXPECT_FALSE(memory.ReadObj<uint8_t>(GuestAddress(0)).has_value());
  EXPECT_FALSE(memory.WriteObj<uint8_t>(GuestAddress(0), 1));
}

}  // namespace
}  // namespace guest_memory_test
}  // namespace minivmm
