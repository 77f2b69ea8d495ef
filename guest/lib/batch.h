// The multicall batch buffer (Xen lazy CPU/MMU mode). Pure: the guest flushes
// it with one multicall hypercall; the host tests check its encoding.
#ifndef GUEST_LIB_BATCH_H_
#define GUEST_LIB_BATCH_H_

#include <stdint.h>

#include "minivmm_abi/hypercall.h"

namespace guest {

class MulticallBatch {
 public:
  // Far below MVMM_MULTICALL_MAX_ENTRIES: a context switch queues at most 7
  // operations and a page walk flushes whenever the buffer is full.
  static constexpr uint32_t kCapacity = 64;

  bool empty() const { return count_ == 0; }
  bool full() const { return count_ == kCapacity; }
  uint32_t count() const { return count_; }
  const mvmm_multicall_entry* entries() const { return entries_; }
  mvmm_multicall_entry* entries() { return entries_; }

  // Queues hypercall `op` with up to five arguments. Returns false when the
  // buffer is full (the caller flushes and retries).
  bool Add(uint64_t op, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0,
           uint64_t a4 = 0) {
    if (full()) return false;
    mvmm_multicall_entry& e = entries_[count_++];
    e.op = op;
    e.result = 0;
    e.args[0] = a0;
    e.args[1] = a1;
    e.args[2] = a2;
    e.args[3] = a3;
    e.args[4] = a4;
    e.args[5] = 0;
    return true;
  }

  // Queues a one-request mmu_update writing `val` to the PTE at guest-physical
  // `pte_gpa`. The request lives in this buffer (at a guest-physical address
  // equal to its pointer: the guest is identity mapped) until Clear().
  bool AddMmuUpdate(uint64_t pte_gpa, uint64_t val) {
    if (full()) return false;
    mvmm_mmu_update& r = reqs_[count_];
    r.ptr = pte_gpa;
    r.val = val;
    return Add(MVMM_HC_mmu_update, reinterpret_cast<uintptr_t>(&r), 1);
  }

  // Queues a one-op mmuext_op loading the page-table base with the page at
  // guest-physical `base_gpa` (MMUEXT_NEW_BASEPTR takes its frame number).
  // The op lives in this buffer until Clear(), like AddMmuUpdate's request.
  bool AddNewBasePtr(uint64_t base_gpa) {
    if (full()) return false;
    mvmm_mmuext_op& op = ext_ops_[count_];
    op = {MVMM_MMUEXT_NEW_BASEPTR, 0, base_gpa >> 12, 0};
    return Add(MVMM_HC_mmuext_op, reinterpret_cast<uintptr_t>(&op), 1);
  }

  void Clear() { count_ = 0; }

 private:
  mvmm_multicall_entry entries_[kCapacity] = {};
  mvmm_mmu_update reqs_[kCapacity] = {};
  mvmm_mmuext_op ext_ops_[kCapacity] = {};
  uint32_t count_ = 0;
};

}  // namespace guest

#endif  // GUEST_LIB_BATCH_H_
