// mmu_update(reqs_gpa, count): write guest page-table entries, each request
// `{u64 ptr; u64 val}` (pte_policy.h decides what is allowed).
// Order: count <= MVMM_MMU_UPDATE_MAX_REQS (-E2BIG; this bound also makes
// count * 16 unable to wrap), count == 0 is a no-op returning 0 (the list is
// not looked at, as for multicall), the whole list inside RAM (-EFAULT); the list is
// then copied once into a host buffer, so requests that overwrite later
// requests in guest memory do not change what is executed. Requests run in
// order and processing stops at the first refused one (Xen does the same and
// reports how many were done).
// Result, like write(2): the number of requests done (count when all were);
// when the very first request is refused, its -errno (-EINVAL misaligned ptr
// or PS/PAT bit, -EFAULT ptr outside RAM, -EPERM a frame outside RAM). A
// guest that gets a short count k can resubmit from request k to learn why.
// Each accepted request is one 8-byte store.
#include <array>

#include "absl/strings/str_format.h"
#include "hypercalls/descriptor.h"
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"
#include "hypercalls/pte_policy.h"
#include "vmm/internal/status_macros.h"

namespace minivmm::hc {

absl::StatusOr<uint64_t> mmu_update(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = MmuUpdateArgs::From(raw);
  if (args.count > MVMM_MMU_UPDATE_MAX_REQS) {
    return absl::ResourceExhaustedError(absl::StrFormat("mmu_update: %d requests is above %d",
                                                        args.count, MVMM_MMU_UPDATE_MAX_REQS));
  }
  if (args.count == 0) return 0;
  std::array<mvmm_mmu_update, MVMM_MMU_UPDATE_MAX_REQS> reqs;  // 8 KiB, bounded
  const std::span<uint8_t> bytes(reinterpret_cast<uint8_t*>(reqs.data()),
                                 args.count * sizeof(mvmm_mmu_update));
  RETURN_IF_ERROR(env.memory.Read(args.reqs, bytes));

  const uint64_t ram_size = env.memory.size();
  for (uint64_t done = 0; done < args.count; ++done) {
    const mvmm_mmu_update& req = reqs[done];
    const absl::Status status = CheckMmuRequest(req, ram_size);
    if (!status.ok()) {
      if (done == 0) return status;
      return done;
    }
    ASSIGN_OR_RETURN(const std::span<uint8_t> pte,
                     env.memory.GetSpan(GuestAddress(req.ptr), sizeof(uint64_t)));
    Store64(pte, 0, req.val);
  }
  return args.count;
}

}  // namespace minivmm::hc
