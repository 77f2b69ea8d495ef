// What mmu_update lets a guest write into its page tables: pure, so it is
// tested exhaustively without guest memory.
#ifndef MINIVMM_HYPERCALLS_PTE_POLICY_H_
#define MINIVMM_HYPERCALLS_PTE_POLICY_H_

#include <cstdint>

#include "hypercalls/hypercall_result.h"
#include "minivmm_abi/hypercall.h"

namespace minivmm {

inline constexpr uint64_t kPtePresent = 1ull << 0;
// PS in a PDE/PDPTE, PAT in a 4K PTE: the same bit, and the VMM does not know
// the level of the entry it is asked to write (see CheckPteValue).
inline constexpr uint64_t kPteLargeOrPat = 1ull << 7;
// Physical-address bits 12..51 of any paging-structure entry.
inline constexpr uint64_t kPteFrameMask = 0x000FFFFFFFFFF000ull;
inline constexpr uint64_t kPageSize = 4096;

// Checks the value of one PTE write against RAM of `ram_size` bytes, as the
// result mmu_update would give for it (Done(0) when accepted, else a refusal
// with its errno and a static reason; no allocation, no formatting):
// - not present (bit 0 clear): any value; the CPU ignores the other bits;
// - present with bit 7 set: -EINVAL. mmu_update does not walk the
//   guest's tables, so it cannot tell a 2M/1G leaf (PS) from a 4K PTE with
//   PAT, and a 1G leaf would need a 1G check; large pages therefore come
//   only from the VMM's boot identity map, and guest PAT is not supported;
// - present otherwise: the frame (bits 12..51) and the whole 4K page it
//   names, be it a page or a next-level table, inside RAM, else -EPERM (the
//   GDT page, MMIO and anything beyond RAM are not the guest's to map).
//   Bits 52..63 (NX, protection keys, ignored) are free.
HypercallResult CheckPteValue(uint64_t val, uint64_t ram_size);

// Checks one whole mmu_update request, in this order: ptr 8-aligned
// (-EINVAL), no bit 7 in a present val (-EINVAL), [ptr, ptr + 8) inside
// RAM (-EFAULT), then the rest of CheckPteValue(val) (-EPERM).
HypercallResult CheckMmuRequest(const mvmm_mmu_update& req, uint64_t ram_size);

}  // namespace minivmm

#endif  // MINIVMM_HYPERCALLS_PTE_POLICY_H_
