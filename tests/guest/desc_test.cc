#include "lib/desc.h"

#include <gtest/gtest.h>

#include "minivmm_abi/boot.h"

namespace guest {
namespace {

TEST(DescTest, TlsDescriptorIsPresentUserDataWithAccessedBit) {
  uint64_t d = MakeTlsDescriptor(0x12345678, 0xfff);
  EXPECT_TRUE(d & kDescPresent);
  EXPECT_TRUE(d & kDescS);
  EXPECT_FALSE(d & kDescTypeCode);
  EXPECT_TRUE(d & MVMM_DESC_ACCESSED);
  EXPECT_EQ((d >> kDescDplShift) & 3, 3u);
  EXPECT_EQ(DescriptorBase(d), 0x12345678u);
  EXPECT_EQ(d & 0xffff, 0xfffu);
}

TEST(DescTest, KnownEncoding) {
  // base 0x00201000, limit 0xfff, type 3, S, DPL 3, P, D/B.
  EXPECT_EQ(MakeTlsDescriptor(0x00201000, 0xfff), 0x0040f32010000fffull);
}

TEST(DescTest, AcceptsWhatTheVmmAccepts) {
  EXPECT_TRUE(IsAcceptableTlsDescriptor(0));
  EXPECT_TRUE(IsAcceptableTlsDescriptor(MakeTlsDescriptor(0x1000, 0xfff)));
}

TEST(DescTest, RefusesCodeSystemKernelAndNotPresent) {
  uint64_t ok = MakeTlsDescriptor(0x1000, 0xfff);
  EXPECT_FALSE(IsAcceptableTlsDescriptor(ok | kDescTypeCode));             // code segment
  EXPECT_FALSE(IsAcceptableTlsDescriptor(ok & ~kDescS));                   // system descriptor
  EXPECT_FALSE(IsAcceptableTlsDescriptor(ok & ~(3ull << kDescDplShift)));  // DPL 0
  EXPECT_FALSE(IsAcceptableTlsDescriptor(ok & ~kDescPresent));             // not present, not zero
  EXPECT_FALSE(IsAcceptableTlsDescriptor(0x00af9b000000ffffull));          // kernel code
}

}  // namespace
}  // namespace guest
