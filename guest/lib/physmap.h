// The pv backend's two frame maps (Xen's p2m and m2p). Pure.
//
// Under backend=pv the kernel numbers its pages pseudo-physically (pfn: the
// address it uses, guest-physical == virtual), while page-table entries hold
// machine frames (mfn: the guest-physical frames KVM's MMU walks, which the
// VMM's mmu_update validates). The two numberings differ on one pool of
// kPhysmapPoolPages frames, aligned to the pool size: pool index i (in
// pseudo-physical numbering) is machine index PhysmapShuffle(i) of the same
// pool. Every other frame has mfn == pfn. The pool is the cpa arena, so the
// PTEs workload=cpa walks all point at shuffled frames.
#ifndef GUEST_LIB_PHYSMAP_H_
#define GUEST_LIB_PHYSMAP_H_

#include <stdint.h>

namespace guest {

inline constexpr uint64_t kPhysmapPoolPages = 512;
inline constexpr uint64_t kPhysmapFrameShift = 12;
// Bits 12..51 of a PTE: the frame (Linux PTE_PFN_MASK).
inline constexpr uint64_t kPhysmapFrameMask = 0x000ffffffffff000ull;
inline constexpr uint64_t kPhysmapPresent = 1;

// The permutation of pool indices: pfn index i -> mfn index 5 i + 3 mod 512.
// 5 is odd, so it is a bijection; it has no fixed point (4 i = -3 has no
// solution mod 512), and it is not its own inverse, so a p2m used where the
// m2p belongs gives a wrong frame.
constexpr uint64_t PhysmapShuffle(uint64_t i) { return (5 * i + 3) % kPhysmapPoolPages; }

// The layout is part of the contract with the patched pte_val call sites
// (pv/pv_ops.cc), which read pool_first and m2p with absolute addressing.
struct Physmap {
  uint64_t pool_first;              // first frame of the pool, in both numberings
  uint64_t p2m[kPhysmapPoolPages];  // pool index of a pfn -> its mfn
  uint64_t m2p[kPhysmapPoolPages];  // pool index of an mfn -> its pfn
};

// Builds both tables for the pool starting at frame `pool_first` (a multiple
// of kPhysmapPoolPages).
inline void PhysmapInit(Physmap* pm, uint64_t pool_first) {
  pm->pool_first = pool_first;
  for (uint64_t i = 0; i < kPhysmapPoolPages; ++i) {
    uint64_t m = PhysmapShuffle(i);
    pm->p2m[i] = pool_first + m;
    pm->m2p[m] = pool_first + i;
  }
}

// pfn_to_mfn: the machine frame of a pseudo-physical one.
inline uint64_t PhysmapPfnToMfn(const Physmap& pm, uint64_t pfn) {
  uint64_t i = pfn - pm.pool_first;
  return i < kPhysmapPoolPages ? pm.p2m[i] : pfn;
}

// mfn_to_pfn: the pseudo-physical frame of a machine one.
inline uint64_t PhysmapMfnToPfn(const Physmap& pm, uint64_t mfn) {
  uint64_t i = mfn - pm.pool_first;
  return i < kPhysmapPoolPages ? pm.m2p[i] : mfn;
}

// Xen's pte_mfn_to_pfn (pte_val): a present entry's frame goes through the
// m2p, every other bit is kept; a not-present entry is returned as is.
inline uint64_t PhysmapPteVal(const Physmap& pm, uint64_t pte) {
  if ((pte & kPhysmapPresent) == 0) return pte;
  uint64_t mfn = (pte & kPhysmapFrameMask) >> kPhysmapFrameShift;
  return (pte & ~kPhysmapFrameMask) | (PhysmapMfnToPfn(pm, mfn) << kPhysmapFrameShift);
}

// Xen's pte_pfn_to_mfn (make_pte): the inverse, through the p2m.
inline uint64_t PhysmapMakePte(const Physmap& pm, uint64_t val) {
  if ((val & kPhysmapPresent) == 0) return val;
  uint64_t pfn = (val & kPhysmapFrameMask) >> kPhysmapFrameShift;
  return (val & ~kPhysmapFrameMask) | (PhysmapPfnToMfn(pm, pfn) << kPhysmapFrameShift);
}

}  // namespace guest

#endif  // GUEST_LIB_PHYSMAP_H_
