#include "lib/tls_shadow.h"

#include <gtest/gtest.h>

namespace guest {
namespace {

TEST(TlsShadowTest, FirstSwitchSendsAllSlots) {
  TlsShadow s;
  uint64_t a[3] = {1, 2, 3};
  EXPECT_EQ(s.Changed(a), 7u);
}

TEST(TlsShadowTest, SameDescriptorsSendNothing) {
  TlsShadow s;
  uint64_t a[3] = {1, 2, 3};
  s.Changed(a);
  EXPECT_EQ(s.Changed(a), 0u);
}

TEST(TlsShadowTest, OnlyChangedSlotsAreSentAndRecorded) {
  TlsShadow s;
  uint64_t a[3] = {1, 2, 3};
  uint64_t b[3] = {9, 2, 3};
  s.Changed(a);
  EXPECT_EQ(s.Changed(b), 1u);
  EXPECT_EQ(s.Changed(b), 0u);
  EXPECT_EQ(s.Changed(a), 1u);
}

TEST(TlsShadowTest, StartsAsTheBootGdtWithEmptySlots) {
  TlsShadow s;
  uint64_t zero[3] = {0, 0, 0};
  EXPECT_EQ(s.Changed(zero), 0u);  // the boot GDT's TLS slots are already empty
  uint64_t a[3] = {1, 0, 3};
  EXPECT_EQ(s.Changed(a), 5u);
}

TEST(TlsShadowTest, ZeroDescriptorIsAValueLikeAnyOther) {
  TlsShadow s;
  uint64_t a[3] = {1, 2, 3};
  uint64_t zero[3] = {0, 0, 0};
  s.Changed(a);
  EXPECT_EQ(s.Changed(zero), 7u);  // emptying the slots is a change like any other
  EXPECT_EQ(s.Changed(zero), 0u);
}

}  // namespace
}  // namespace guest
