#include "hypercalls/pte_policy.h"

#include "absl/strings/str_format.h"

namespace minivmm {

absl::Status CheckPteValue(uint64_t val, uint64_t ram_size) {
  if ((val & kPtePresent) == 0) return absl::OkStatus();
  if ((val & kPteLargeOrPat) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("pte 0x%x: PS/PAT (bit 7) is not accepted by mmu_update", val));
  }
  const uint64_t frame = val & kPteFrameMask;
  if (frame >= ram_size || ram_size - frame < kPageSize) {
    return absl::PermissionDeniedError(
        absl::StrFormat("pte 0x%x maps frame 0x%x outside RAM", val, frame));
  }
  return absl::OkStatus();
}

absl::Status CheckMmuRequest(const mvmm_mmu_update& req, uint64_t ram_size) {
  if (req.ptr % sizeof(uint64_t) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat("pte address 0x%x is misaligned", req.ptr));
  }
  if (req.ptr >= ram_size || ram_size - req.ptr < sizeof(uint64_t)) {
    return absl::OutOfRangeError(absl::StrFormat("pte address 0x%x is outside RAM", req.ptr));
  }
  return CheckPteValue(req.val, ram_size);
}

}  // namespace minivmm
