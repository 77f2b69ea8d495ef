#include "hypercalls/descriptor.h"

#include <gtest/gtest.h>

#include <vector>

#include "minivmm_abi/boot.h"
#include "tests/common/descriptors.h"

namespace minivmm {
namespace {

using testing::DescFields;
using testing::MakeDesc;

// The rule of docs/design.md "GDT", restated over fields rather than bit masks so the
// test does not share the implementation's arithmetic.
DescriptorVerdict Expected(const DescFields& f) {
  const bool all_zero = f.base == 0 && f.limit == 0 && f.type == 0 && f.s == 0 && f.dpl == 0 &&
                        f.p == 0 && f.avl == 0 && f.l == 0 && f.db == 0 && f.g == 0;
  if (all_zero) return DescriptorVerdict::kOk;
  if (!f.p) return DescriptorVerdict::kNotPresent;
  if (!f.s) return DescriptorVerdict::kSystemSegment;
  if (f.type >= 8) return DescriptorVerdict::kCodeSegment;
  if (f.dpl != 3) return DescriptorVerdict::kWrongDpl;
  if (f.l) return DescriptorVerdict::kLongBitSet;
  return DescriptorVerdict::kOk;
}

TEST(DescriptorTest, ExhaustiveOverAttributesWithEdgeBasesAndLimits) {
  const uint32_t bases[] = {0, 0xFFFFFFFF, 0x00FFFFFF, 0xFF000000, 0x12345678};
  const uint32_t limits[] = {0, 0xFFFFF, 0x0FFFF, 0xF0000};
  int accepted = 0, checked = 0;
  for (uint32_t base : bases) {
    for (uint32_t limit : limits) {
      for (unsigned bits = 0; bits < (1u << 11); ++bits) {
        DescFields f;
        f.base = base;
        f.limit = limit;
        f.type = bits & 0xF;
        f.s = bits >> 4 & 1;
        f.dpl = bits >> 5 & 3;
        f.p = bits >> 7 & 1;
        f.l = bits >> 8 & 1;
        f.db = bits >> 9 & 1;
        f.g = bits >> 10 & 1;
        for (unsigned avl = 0; avl < 2; ++avl) {
          f.avl = avl;
          const uint64_t desc = MakeDesc(f);
          const DescriptorVerdict want = Expected(f);
          ASSERT_EQ(CheckTlsDescriptor(desc), want) << std::hex << desc;
          ++checked;
          if (want != DescriptorVerdict::kOk) continue;
          ++accepted;
          const uint64_t stored = TlsDescriptorToStore(desc);
          if (desc == 0) {
            EXPECT_EQ(stored, 0u);
          } else {
            EXPECT_EQ(stored, desc | MVMM_DESC_ACCESSED) << std::hex << desc;
            EXPECT_EQ(CheckTlsDescriptor(stored), DescriptorVerdict::kOk);
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 5 * 4 * 2048 * 2);
  // Per base/limit: 8 data types x 2 D/B x 2 G x 2 AVL present DPL-3 L=0,
  // plus the all-zero descriptor once (base 0, limit 0).
  EXPECT_EQ(accepted, 5 * 4 * 64 + 1);
}

TEST(DescriptorTest, LinuxUserTlsDescriptorIsAccepted) {
  EXPECT_EQ(CheckTlsDescriptor(testing::kUserTlsDesc), DescriptorVerdict::kOk);
  EXPECT_EQ(TlsDescriptorToStore(testing::kUserTlsDesc), 0x00CFF3000000FFFFull);
}

TEST(DescriptorTest, AlreadyAccessedDescriptorIsStoredUnchanged) {
  EXPECT_EQ(TlsDescriptorToStore(0x00CFF3000000FFFFull), 0x00CFF3000000FFFFull);
}

TEST(DescriptorTest, BootGdtEntriesAreRefusedForTls) {
  EXPECT_EQ(CheckTlsDescriptor(0x00AF9B000000FFFFull),
            DescriptorVerdict::kCodeSegment);                                          // kernel CS
  EXPECT_EQ(CheckTlsDescriptor(0x00CF93000000FFFFull), DescriptorVerdict::kWrongDpl);  // kernel DS
  EXPECT_EQ(CheckTlsDescriptor(0x00AFFB000000FFFFull), DescriptorVerdict::kCodeSegment);  // user CS
  EXPECT_EQ(CheckTlsDescriptor(0x00008B0030000067ull), DescriptorVerdict::kSystemSegment);  // TSS
}

TEST(DescriptorTest, NonZeroNotPresentIsRefused) {
  EXPECT_EQ(CheckTlsDescriptor(1), DescriptorVerdict::kNotPresent);
  EXPECT_EQ(CheckTlsDescriptor(MVMM_DESC_ACCESSED), DescriptorVerdict::kNotPresent);
  EXPECT_EQ(CheckTlsDescriptor(0x00CF72000000FFFFull), DescriptorVerdict::kNotPresent);
}

TEST(DescriptorTest, VerdictNamesAreDistinct) {
  EXPECT_STREQ(DescriptorVerdictName(DescriptorVerdict::kOk), "ok");
  EXPECT_STREQ(DescriptorVerdictName(DescriptorVerdict::kLongBitSet),
               "L bit set on a data segment");
}

TEST(DescriptorTest, OnlySlotsSevenToNineAreTls) {
  for (uint64_t slot = 0; slot < 512; ++slot) {
    EXPECT_EQ(IsTlsSlot(slot), slot >= 7 && slot <= 9) << slot;
  }
  EXPECT_FALSE(IsTlsSlot(~0ull));
}

TEST(DescriptorTest, Store64WritesExactlyEightBytesAlignedOrNot) {
  std::vector<uint8_t> bytes(32, 0xAA);
  Store64(bytes, 8, 0x0102030405060708ull);
  Store64(bytes, 19, 0x1112131415161718ull);  // unaligned host address
  const std::vector<uint8_t> want = {0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA,
                                     0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
                                     0xAA, 0xAA, 0xAA, 0x18, 0x17, 0x16, 0x15, 0x14,
                                     0x13, 0x12, 0x11, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA};
  EXPECT_EQ(bytes, want);
}

}  // namespace
}  // namespace minivmm
