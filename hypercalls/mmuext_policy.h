// What mmuext_op lets a guest load as its page-table base: pure, so it is
// tested on its own, without guest memory.
#ifndef MINIVMM_HYPERCALLS_MMUEXT_POLICY_H_
#define MINIVMM_HYPERCALLS_MMUEXT_POLICY_H_

#include <cstdint>

#include "hypercalls/hypercall_result.h"
#include "minivmm_abi/hypercall.h"

namespace minivmm {

// Checks one mmuext_op against RAM of `ram_size` bytes, as the result the
// batch would give for it (Done(0) when accepted, else a refusal with its
// errno and a static reason; no allocation, no formatting). In this order:
// - cmd other than MVMM_MMUEXT_NEW_BASEPTR: -EINVAL (no other Xen command
//   is implemented);
// - `reserved` or `arg2` not 0: -EINVAL;
// - the frame `arg1` not wholly inside RAM (which also excludes the GDT
//   page, above RAM, and any frame number whose address overflows): -EFAULT;
// - a frame below MVMM_PAGE_TABLES_GPA (page 0 and the VMM's boot_info,
//   command line and TSS pages, which the VMM writes): -EPERM.
// The base is a frame number, so it is page aligned by construction and
// cannot set CR3's PWT, PCD or PCID bits. The VMM does not walk or type the
// table (as for mmu_update): a top-level table that maps nothing useful
// faults in the guest, which is the guest's own affair.
HypercallResult CheckMmuextOp(const mvmm_mmuext_op& op, uint64_t ram_size);

// The CR3 value NEW_BASEPTR loads for an accepted op.
inline uint64_t BasePtrCr3(const mvmm_mmuext_op& op) { return op.arg1 << 12; }

}  // namespace minivmm

#endif  // MINIVMM_HYPERCALLS_MMUEXT_POLICY_H_
