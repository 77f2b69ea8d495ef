// set_timer_op(deadline_ns): arm the vCPU's one-shot timer at guest time
// `deadline_ns` (0 cancels; a past deadline fires at once: TimerControl's
// contract). -ENOSYS when no timer is wired. Returns 0.
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"

namespace minivmm::hc {

HypercallResult set_timer_op(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = SetTimerOpArgs::From(raw);
  if (env.timer == nullptr) return Refuse(MVMM_ENOSYS, "no timer wired");
  env.timer->SetOneShot(args.deadline_ns);
  return Done(0);
}

}  // namespace minivmm::hc
