#include "hypercalls/mmuext_policy.h"

#include "minivmm_abi/boot.h"

namespace minivmm {

HypercallResult CheckMmuextOp(const mvmm_mmuext_op& op, uint64_t ram_size) {
  if (op.cmd != MVMM_MMUEXT_NEW_BASEPTR) return Refuse(MVMM_EINVAL, "unknown mmuext_op command");
  if (op.reserved != 0 || op.arg2 != 0) {
    return Refuse(MVMM_EINVAL, "NEW_BASEPTR with reserved or arg2 not 0");
  }
  constexpr uint64_t kPageSize = 4096;
  const uint64_t frames = ram_size / kPageSize;  // RAM is a whole number of pages
  if (op.arg1 >= frames) return Refuse(MVMM_EFAULT, "NEW_BASEPTR frame outside RAM");
  if (op.arg1 < MVMM_PAGE_TABLES_GPA / kPageSize) {
    return Refuse(MVMM_EPERM, "NEW_BASEPTR frame in the VMM's boot pages");
  }
  return Done(0);
}

}  // namespace minivmm
