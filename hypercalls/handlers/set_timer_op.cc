// set_timer_op(deadline_ns): arm the calling vCPU's own one-shot timer at
// guest time `deadline_ns` (0 cancels it; a past deadline fires at once:
// TimerControl's contract). It interrupts that vCPU only. -ENOSYS when no
// timer is wired, or the one wired has no one-shot for this vCPU (a vCPU
// beyond its count). Returns 0.
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"

namespace minivmm::hc {

HypercallResult set_timer_op(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_set_timer_op>(raw);
  if (env.timer == nullptr) return Refuse(MVMM_ENOSYS, "no timer wired");
  if (!env.timer->SetVcpuOneShot(env.exit.vcpu_id, args.deadline_ns))
    return Refuse(MVMM_ENOSYS, "no one-shot timer for this vCPU");
  return Done(0);
}

}  // namespace minivmm::hc
