// Hypercall transport (docs/design.md "Hypercalls") with per-number accounting.
// Every hypercall the guest issues goes through Hypercall() or FlushBatch(),
// so kernel.hc.* and kernel.hc_exits.* equal the VMM's own counts exactly.
#ifndef GUEST_KERNEL_HYPERCALL_H_
#define GUEST_KERNEL_HYPERCALL_H_

#include <stdint.h>

#include "lib/batch.h"
#include "lib/format.h"
#include "minivmm_abi/hypercall.h"

namespace guest {

// Counted exactly as the VMM counts (hypercalls/dispatcher.h),
// so every field equals its VMM counterpart for the same run.
struct HypercallCounts {
  uint64_t ops[MVMM_HC_MAX];     // direct calls plus multicall entries, by op
  uint64_t exits[MVMM_HC_MAX];   // direct calls only (a multicall is one exit)
  uint64_t errors[MVMM_HC_MAX];  // of the ops, those that returned < 0
  // Operations on a number nobody registered (-ENOSYS): the VMM counts them
  // only in hypercalls.bad_number, not under any number.
  uint64_t bad_number;
};

// True for the numbers of MVMM_HYPERCALL_LIST (always registered).
bool IsAbiHypercall(uint64_t nr);

// Counts into `hc` (the calling CPU's) one operation `nr` (for a direct call: EAX, the low 32 bits of
// RAX, which is what the VMM dispatches on) that returned `result`; `direct`
// when it was its own exit. A number >= MVMM_HC_MAX, or one outside the ABI
// that got -ENOSYS (no embedder registered it), is a bad number. (An
// embedder's handler that itself returns -ENOSYS would be miscounted as a
// bad number; none does.)
void CountHypercallOp(HypercallCounts& hc, uint64_t nr, int64_t result, bool direct);

// One `out %eax, $0xEC`: exactly one VM exit. Returns RAX (>= 0 or -errno).
inline int64_t RawHypercall(uint64_t nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0,
                            uint64_t a3 = 0, uint64_t a4 = 0) {
  uint64_t rax = nr;
  register uint64_t r10 asm("r10") = a3;
  register uint64_t r8 asm("r8") = a4;
  asm volatile("outl %%eax, %[port]"
               : "+a"(rax)
               : [port] "i"(MVMM_HYPERCALL_PORT), "D"(a0), "S"(a1), "d"(a2), "r"(r10), "r"(r8)
               : "memory");
  return static_cast<int64_t>(rax);
}

// Counted hypercall; the result is returned unchecked. `nr` may carry high
// bits (the hostile workload's test): the VMM and the count use EAX.
int64_t Hypercall(uint64_t nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0,
                  uint64_t a4 = 0);

// Counted hypercall for a privileged operation the kernel cannot do without:
// a negative result panics (code 4) naming the hypercall and the errno, so a
// VMM that lacks it (-ENOSYS) is obvious.
int64_t HypercallOrDie(uint64_t nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0,
                       uint64_t a3 = 0, uint64_t a4 = 0);

// Issues `batch` as one multicall (if not empty), checks every entry's
// result the same way, counts it and clears it.
void FlushBatch(MulticallBatch* batch);

// One counted multicall of `count` entries at guest-physical `list_gpa`
// (identity mapped, so also its address) with no checks: the probes'
// (hcall, hostile) raw form. When the VMM accepted the list (result >= 0),
// every entry is counted with the result the VMM wrote back into it.
int64_t Multicall(uint64_t list_gpa, uint64_t count);

const char* HypercallName(uint64_t nr);

// Appends "prefix.hc.<name>=ops", "prefix.hc_exits.<name>=exits" and
// "prefix.hc_errors.<name>=errors" for every hypercall of the ABI, zeros
// included, then the same three for the embedders' range 64..127 summed
// (`user_range`), and "prefix.hc_bad_number=N".
void AppendHypercallCounts(StrView prefix, const HypercallCounts& c, TextBuf* out);

}  // namespace guest

#endif  // GUEST_KERNEL_HYPERCALL_H_
