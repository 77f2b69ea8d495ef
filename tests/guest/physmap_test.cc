#include "lib/physmap.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <set>

namespace guest {
namespace {

constexpr uint64_t kFirst = 0x600;  // a pool at 6 MiB
constexpr uint64_t kNx = 1ull << 63;
constexpr uint64_t kFlags = kPhysmapPresent | 0x2 | 0x20;  // P, W, A

Physmap Make() {
  static Physmap pm;
  PhysmapInit(&pm, kFirst);
  return pm;
}

TEST(PhysmapTest, ShuffleIsAPermutationWithoutFixedPointsThatIsNotItsOwnInverse) {
  std::set<uint64_t> seen;
  bool involution = true;
  for (uint64_t i = 0; i < kPhysmapPoolPages; ++i) {
    uint64_t m = PhysmapShuffle(i);
    EXPECT_LT(m, kPhysmapPoolPages);
    EXPECT_NE(m, i) << i;
    seen.insert(m);
    if (PhysmapShuffle(m) != i) involution = false;
  }
  EXPECT_EQ(seen.size(), kPhysmapPoolPages);
  EXPECT_FALSE(involution);
}

TEST(PhysmapTest, P2mAndM2pAreInversesOverThePool) {
  Physmap pm = Make();
  for (uint64_t pfn = kFirst; pfn < kFirst + kPhysmapPoolPages; ++pfn) {
    uint64_t mfn = PhysmapPfnToMfn(pm, pfn);
    EXPECT_GE(mfn, kFirst);
    EXPECT_LT(mfn, kFirst + kPhysmapPoolPages);
    EXPECT_NE(mfn, pfn);
    EXPECT_EQ(PhysmapMfnToPfn(pm, mfn), pfn);
  }
  EXPECT_EQ(PhysmapPfnToMfn(pm, kFirst), kFirst + 3);
  EXPECT_EQ(PhysmapMfnToPfn(pm, kFirst + 3), kFirst);
  EXPECT_EQ(PhysmapPfnToMfn(pm, kFirst + 1), kFirst + 8);
}

TEST(PhysmapTest, FramesOutsideThePoolAreTheirOwnMachineFrames) {
  Physmap pm = Make();
  for (uint64_t f :
       std::initializer_list<uint64_t>{0, 1, kFirst - 1, kFirst + kPhysmapPoolPages,
                                       kFirst + kPhysmapPoolPages + 1, (1ull << 40) - 1}) {
    EXPECT_EQ(PhysmapPfnToMfn(pm, f), f) << f;
    EXPECT_EQ(PhysmapMfnToPfn(pm, f), f) << f;
  }
}

TEST(PhysmapTest, PteValReplacesThePresentFrameAndKeepsEveryOtherBit) {
  Physmap pm = Make();
  uint64_t mfn = PhysmapPfnToMfn(pm, kFirst + 7);
  uint64_t pte = (mfn << 12) | kFlags | kNx | (0x7ffull << 52);
  EXPECT_EQ(PhysmapPteVal(pm, pte), ((kFirst + 7) << 12) | kFlags | kNx | (0x7ffull << 52));
  // The flags never change: what pte_flags:optimized relies on.
  EXPECT_EQ(PhysmapPteVal(pm, pte) & ~kPhysmapFrameMask, pte & ~kPhysmapFrameMask);
}

TEST(PhysmapTest, NotPresentEntriesAreNotTranslated) {
  Physmap pm = Make();
  uint64_t v = (kFirst << 12) | 0x2;
  EXPECT_EQ(PhysmapPteVal(pm, v), v);
  EXPECT_EQ(PhysmapMakePte(pm, v), v);
  EXPECT_EQ(PhysmapPteVal(pm, 0), 0u);
}

TEST(PhysmapTest, MakePteIsTheInverseOfPteVal) {
  Physmap pm = Make();
  for (uint64_t pfn = kFirst - 2; pfn < kFirst + kPhysmapPoolPages + 2; ++pfn) {
    uint64_t val = (pfn << 12) | kFlags | kNx;
    uint64_t pte = PhysmapMakePte(pm, val);
    EXPECT_EQ(pte & ~kPhysmapFrameMask, val & ~kPhysmapFrameMask);
    EXPECT_EQ(pte >> 12 & ((1ull << 40) - 1), PhysmapPfnToMfn(pm, pfn));
    EXPECT_EQ(PhysmapPteVal(pm, pte), val) << pfn;
  }
}

}  // namespace
}  // namespace guest
