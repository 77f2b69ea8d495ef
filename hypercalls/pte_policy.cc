#include "hypercalls/pte_policy.h"

namespace minivmm {

namespace {

bool PresentWithBit7(uint64_t val) {
  return (val & kPtePresent) != 0 && (val & kPteLargeOrPat) != 0;
}

constexpr char kBit7Refusal[] = "PS/PAT bit 7 set in a present PTE";

}  // namespace

HypercallResult CheckPteValue(uint64_t val, uint64_t ram_size) {
  if ((val & kPtePresent) == 0) return Done(0);
  if (PresentWithBit7(val)) return Refuse(MVMM_EINVAL, kBit7Refusal);
  const uint64_t frame = val & kPteFrameMask;
  if (frame >= ram_size || ram_size - frame < kPageSize) {
    return Refuse(MVMM_EPERM, "PTE maps a frame outside RAM");
  }
  return Done(0);
}

HypercallResult CheckMmuRequest(const mvmm_mmu_update& req, uint64_t ram_size) {
  // The -EINVAL checks of both fields come before the -EFAULT of ptr
  // (docs/hypercalls.md, mmu_update).
  if (req.ptr % sizeof(uint64_t) != 0) return Refuse(MVMM_EINVAL, "PTE address misaligned");
  if (PresentWithBit7(req.val)) return Refuse(MVMM_EINVAL, kBit7Refusal);
  if (req.ptr >= ram_size || ram_size - req.ptr < sizeof(uint64_t)) {
    return Refuse(MVMM_EFAULT, "PTE address outside RAM");
  }
  return CheckPteValue(req.val, ram_size);
}

}  // namespace minivmm
