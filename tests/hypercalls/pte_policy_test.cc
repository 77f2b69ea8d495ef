#include "hypercalls/pte_policy.h"

#include <gtest/gtest.h>

namespace minivmm {
// A namespace of the file's own: the test binaries are unity builds.
namespace pte_policy_test {
namespace {

constexpr uint64_t kRam = 64ull << 20;

// The errno the guest would get (0 when accepted); accepted values carry no
// refusal and refused ones always carry one.
int64_t Errno(HypercallResult result) {
  EXPECT_EQ(result.refusal != nullptr, !result.ok());
  return result.ok() ? 0 : result.value;
}

TEST(PtePolicyTest, NotPresentValueIsAnything) {
  EXPECT_EQ(Errno(CheckPteValue(0, kRam)), 0);
  EXPECT_EQ(Errno(CheckPteValue(~1ull, kRam)), 0);  // every bit but P
}

TEST(PtePolicyTest, PresentFrameInsideRamIsAccepted) {
  EXPECT_EQ(Errno(CheckPteValue(0x0 | 0x3, kRam)), 0);
  EXPECT_EQ(Errno(CheckPteValue((kRam - 4096) | 0x67, kRam)), 0);            // last page
  EXPECT_EQ(Errno(CheckPteValue(0x5000 | 0x1 | (1ull << 63), kRam)), 0);     // NX
  EXPECT_EQ(Errno(CheckPteValue(0x5000 | 0x1 | (0x7Full << 52), kRam)), 0);  // ignored/PK bits
}

TEST(PtePolicyTest, PresentFrameAtOrPastEndOfRamIsEperm) {
  EXPECT_EQ(Errno(CheckPteValue(kRam | 1, kRam)), -MVMM_EPERM);
  EXPECT_EQ(Errno(CheckPteValue(0xC0000000ull | 3, kRam)), -MVMM_EPERM);
  EXPECT_EQ(Errno(CheckPteValue(0x000FFFFFFFFFF001ull, kRam)), -MVMM_EPERM);
  EXPECT_STREQ(CheckPteValue(kRam | 1, kRam).refusal, "PTE maps a frame outside RAM");
}

TEST(PtePolicyTest, LastPageMustFitWholly) {
  // RAM that ends mid-page: the page containing the end is not mappable.
  EXPECT_EQ(Errno(CheckPteValue(0x1000 | 1, 0x1800)), -MVMM_EPERM);
  EXPECT_EQ(Errno(CheckPteValue(0x0000 | 1, 0x1800)), 0);
  EXPECT_EQ(Errno(CheckPteValue(0x0000 | 1, 0)), -MVMM_EPERM);
}

TEST(PtePolicyTest, PresentWithBitSevenIsEinval) {
  EXPECT_EQ(Errno(CheckPteValue(0x200000 | 0x83, kRam)), -MVMM_EINVAL);
  EXPECT_STREQ(CheckPteValue(0x200000 | 0x83, kRam).refusal, "PS/PAT bit 7 set in a present PTE");
  EXPECT_EQ(Errno(CheckPteValue(0x200000 | 0x82, kRam)), 0);  // not present: ignored
}

TEST(PtePolicyTest, RequestChecksAlignmentThenRangeThenValue) {
  EXPECT_EQ(Errno(CheckMmuRequest({0x1004, 0x5001}, kRam)), -MVMM_EINVAL);
  EXPECT_EQ(Errno(CheckMmuRequest({kRam + 4, kRam | 1}, kRam)), -MVMM_EINVAL);
  EXPECT_STREQ(CheckMmuRequest({kRam + 4, kRam | 1}, kRam).refusal, "PTE address misaligned");
  EXPECT_EQ(Errno(CheckMmuRequest({kRam, kRam | 1}, kRam)), -MVMM_EFAULT);
  EXPECT_EQ(Errno(CheckMmuRequest({~7ull, 0}, kRam)), -MVMM_EFAULT);
  EXPECT_STREQ(CheckMmuRequest({~7ull, 0}, kRam).refusal, "PTE address outside RAM");
  EXPECT_EQ(Errno(CheckMmuRequest({kRam - 8, kRam | 1}, kRam)), -MVMM_EPERM);
  EXPECT_EQ(Errno(CheckMmuRequest({kRam - 8, 0x5001}, kRam)), 0);
  EXPECT_EQ(Errno(CheckMmuRequest({0, 0}, kRam)), 0);
}

TEST(PtePolicyTest, AcceptedValueIsDoneZero) {
  const HypercallResult result = CheckMmuRequest({0, 0x5001}, kRam);
  EXPECT_EQ(result.value, 0);
  EXPECT_EQ(result.refusal, nullptr);
}

}  // namespace
}  // namespace pte_policy_test
}  // namespace minivmm
