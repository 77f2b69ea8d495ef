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
#include <optional>
#include <span>

#include "hypercalls/descriptor.h"
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"
#include "hypercalls/pte_policy.h"

namespace minivmm::hc {

HypercallResult mmu_update(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_mmu_update>(raw);
  if (args.count > MVMM_MMU_UPDATE_MAX_REQS) {
    return Refuse(MVMM_E2BIG, "count above MVMM_MMU_UPDATE_MAX_REQS");
  }
  if (args.count == 0) return Done(0);
  std::array<mvmm_mmu_update, MVMM_MMU_UPDATE_MAX_REQS> buffer;  // 8 KiB, bounded
  const std::span<mvmm_mmu_update> reqs(buffer.data(), args.count);
  if (!env.memory.Read(args.reqs, reqs)) return Refuse(MVMM_EFAULT, "request list outside RAM");

  const uint64_t ram_size = env.memory.size();
  for (uint64_t done = 0; done < reqs.size(); ++done) {
    const mvmm_mmu_update& req = reqs[done];
    const HypercallResult check = CheckMmuRequest(req, ram_size);
    if (!check.ok()) return done == 0 ? check : Done(done);
    // Cannot fail: CheckMmuRequest just found [ptr, ptr + 8) inside RAM.
    const std::optional<std::span<uint8_t>> pte =
        env.memory.GetSpan(GuestAddress(req.ptr), sizeof(uint64_t));
    if (!pte) return Refuse(MVMM_EFAULT, "PTE address outside RAM");
    if (env.exit.waste != nullptr) [[unlikely]] {
      NoteHypercallOp(env, MVMM_HC_mmu_update, raw,
                      Load64(*pte, 0) == req.val ? OpEffect::kUnchanged : OpEffect::kChanged);
    }
    Store64(*pte, 0, req.val);
  }
  return Done(args.count);
}

}  // namespace minivmm::hc
