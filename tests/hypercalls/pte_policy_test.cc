#include "hypercalls/pte_policy.h"

#include <gtest/gtest.h>

namespace minivmm {
namespace {

constexpr uint64_t kRam = 64ull << 20;

TEST(PtePolicyTest, NotPresentValueIsAnything) {
  EXPECT_TRUE(CheckPteValue(0, kRam).ok());
  EXPECT_TRUE(CheckPteValue(~1ull, kRam).ok());  // every bit but P
}

TEST(PtePolicyTest, PresentFrameInsideRamIsAccepted) {
  EXPECT_TRUE(CheckPteValue(0x0 | 0x3, kRam).ok());
  EXPECT_TRUE(CheckPteValue((kRam - 4096) | 0x67, kRam).ok());            // last page
  EXPECT_TRUE(CheckPteValue(0x5000 | 0x1 | (1ull << 63), kRam).ok());     // NX
  EXPECT_TRUE(CheckPteValue(0x5000 | 0x1 | (0x7Full << 52), kRam).ok());  // ignored/PK bits
}

TEST(PtePolicyTest, PresentFrameAtOrPastEndOfRamIsPermissionDenied) {
  EXPECT_EQ(CheckPteValue(kRam | 1, kRam).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(CheckPteValue(0xC0000000ull | 3, kRam).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(CheckPteValue(0x000FFFFFFFFFF001ull, kRam).code(), absl::StatusCode::kPermissionDenied);
}

TEST(PtePolicyTest, LastPageMustFitWholly) {
  // RAM that ends mid-page: the page containing the end is not mappable.
  EXPECT_EQ(CheckPteValue(0x1000 | 1, 0x1800).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(CheckPteValue(0x0000 | 1, 0x1800).ok());
  EXPECT_EQ(CheckPteValue(0x0000 | 1, 0).code(), absl::StatusCode::kPermissionDenied);
}

TEST(PtePolicyTest, PresentWithBitSevenIsInvalid) {
  EXPECT_EQ(CheckPteValue(0x200000 | 0x83, kRam).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckPteValue(0x200000 | 0x82, kRam).ok());  // not present: ignored
}

TEST(PtePolicyTest, RequestChecksAlignmentThenRangeThenValue) {
  EXPECT_EQ(CheckMmuRequest({0x1004, 0x5001}, kRam).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckMmuRequest({kRam + 4, kRam | 1}, kRam).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckMmuRequest({kRam, kRam | 1}, kRam).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(CheckMmuRequest({~7ull, 0}, kRam).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(CheckMmuRequest({kRam - 8, kRam | 1}, kRam).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(CheckMmuRequest({kRam - 8, 0x5001}, kRam).ok());
  EXPECT_TRUE(CheckMmuRequest({0, 0}, kRam).ok());
}

}  // namespace
}  // namespace minivmm
