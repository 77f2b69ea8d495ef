// The vCPU mask of send_ipi and flush_tlb_others: bit n names vCPU n.
#ifndef MINIVMM_HYPERCALLS_HANDLERS_CPU_MASK_H_
#define MINIVMM_HYPERCALLS_HANDLERS_CPU_MASK_H_

#include <bit>
#include <cstdint>

#include "hypercalls/hypercall_result.h"
#include "minivmm/vcpu_directory.h"
#include "minivmm_abi/hypercall.h"

namespace minivmm::hc {

// The checks both calls start with, in this order: a directory is wired
// (-ENOSYS), the mask is not empty (-EINVAL), it names no vCPU at or above
// the VM's count (-EINVAL). A refusal, or Done(number of vCPUs named).
inline HypercallResult CheckCpuMask(const VcpuDirectory* cpus, uint64_t mask) {
  if (cpus == nullptr) return Refuse(MVMM_ENOSYS, "no vCPU directory wired");
  if (mask == 0) return Refuse(MVMM_EINVAL, "empty vCPU mask");
  const uint32_t count = cpus->count();
  if (count < 64 && (mask >> count) != 0)
    return Refuse(MVMM_EINVAL, "the vCPU mask names a vCPU the VM does not have");
  return Done(static_cast<uint64_t>(std::popcount(mask)));
}

// Calls fn(n) for every vCPU n in `mask`, lowest first.
template <typename Fn>
void ForEachCpu(uint64_t mask, Fn fn) {
  for (; mask != 0; mask &= mask - 1) fn(static_cast<uint32_t>(std::countr_zero(mask)));
}

}  // namespace minivmm::hc

#endif  // MINIVMM_HYPERCALLS_HANDLERS_CPU_MASK_H_
