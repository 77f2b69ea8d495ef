// Hypercall transport (DESIGN.md "Hypercalls") with per-number accounting.
// Every hypercall the guest issues goes through Hypercall() or FlushBatch(),
// so kernel.hc.* and kernel.hc_exits.* equal the VMM's own counts exactly.
#ifndef GUEST_KERNEL_HYPERCALL_H_
#define GUEST_KERNEL_HYPERCALL_H_

#include <stdint.h>

#include "lib/batch.h"
#include "lib/format.h"
#include "minivmm_abi/hypercall.h"

namespace guest {

struct HypercallCounts {
  uint64_t ops[MVMM_HC_MAX];    // direct calls plus multicall entries, by op
  uint64_t exits[MVMM_HC_MAX];  // direct calls only (a multicall is one exit)
};
extern HypercallCounts g_hc;

// One `out %eax, $0xEC`: exactly one VM exit. Returns RAX (>= 0 or -errno).
inline int64_t RawHypercall(uint64_t nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0,
                            uint64_t a4 = 0) {
  uint64_t rax = nr;
  register uint64_t r10 asm("r10") = a3;
  register uint64_t r8 asm("r8") = a4;
  asm volatile("outl %%eax, %[port]"
               : "+a"(rax)
               : [port] "i"(MVMM_HYPERCALL_PORT), "D"(a0), "S"(a1), "d"(a2), "r"(r10), "r"(r8)
               : "memory");
  return static_cast<int64_t>(rax);
}

// Counted hypercall; the result is returned unchecked.
int64_t Hypercall(uint64_t nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0, uint64_t a4 = 0);

// Counted hypercall for a privileged operation the kernel cannot do without:
// a negative result panics (code 4) naming the hypercall and the errno, so a
// VMM that lacks it (-ENOSYS) is obvious.
int64_t HypercallOrDie(uint64_t nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0,
                       uint64_t a4 = 0);

// Issues `batch` as one multicall (if not empty), checks every entry's
// result the same way, counts it and clears it.
void FlushBatch(MulticallBatch* batch);

const char* HypercallName(uint64_t nr);

// Appends "prefix.hc.<name>=ops" and "prefix.hc_exits.<name>=exits" for
// every hypercall number with a non-zero count, and for the ones the
// workloads care about even when zero.
void AppendHypercallCounts(StrView prefix, const HypercallCounts& c, TextBuf* out);

}  // namespace guest

#endif  // GUEST_KERNEL_HYPERCALL_H_
