// send_ipi(mask, vector): makes MVMM_IPI_VECTOR pending on every vCPU whose
// bit is set in `mask` (bit n = vCPU n, the caller's own allowed). Order: a
// vCPU directory is wired (-ENOSYS), mask not 0 (-EINVAL), no bit at or
// above the VM's vCPU count (-EINVAL), vector == MVMM_IPI_VECTOR (-EINVAL).
// Then, and only then, every target gets the IPI (VcpuDirectory::SendIpi: a
// blocked target is woken, a running one kicked, one already pending merges).
// Returns the number of vCPUs targeted, which the dispatcher counts as the
// `ipi` cause's operations.
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/cpu_mask.h"
#include "hypercalls/handlers/handlers.h"
#include "minivmm_abi/boot.h"

namespace minivmm::hc {

HypercallResult send_ipi(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_send_ipi>(raw);
  const HypercallResult targets = CheckCpuMask(env.cpus, args.mask);
  if (!targets.ok()) return targets;
  if (args.vector != MVMM_IPI_VECTOR) return Refuse(MVMM_EINVAL, "vector is not MVMM_IPI_VECTOR");
  const uint32_t self = env.exit.vcpu_id;
  ForEachCpu(args.mask, [&](uint32_t cpu) { env.cpus->SendIpi(self, cpu); });
  return targets;
}

}  // namespace minivmm::hc
