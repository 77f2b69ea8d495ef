// sched_op(cmd, arg): 0 yield, 1 block until an interrupt, 2 shutdown with
// exit code `arg` (0..255). Order: cmd known (-EINVAL), then for shutdown
// arg <= 255 (-EINVAL). Returns 0; the request takes effect when the run loop
// reads RunControl after this exit (for a multicall: after the whole batch).
// A pending shutdown is never downgraded by a later yield or block in the same
// batch: the guest asked to stop and must stop.
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"

namespace minivmm::hc {
namespace {

void Request(RunControl& control, VcpuRequest request) {
  if (control.request != VcpuRequest::kShutdown) control.request = request;
}

}  // namespace

HypercallResult sched_op(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = SchedOpArgs::From(raw);
  RunControl& control = env.exit.control;
  switch (args.cmd) {
    case MVMM_SCHEDOP_YIELD:
      Request(control, VcpuRequest::kYield);
      return Done(0);
    case MVMM_SCHEDOP_BLOCK:
      Request(control, VcpuRequest::kBlock);
      return Done(0);
    case MVMM_SCHEDOP_SHUTDOWN:
      if (args.arg > 255) return Refuse(MVMM_EINVAL, "exit code above 255");
      control.Shutdown(static_cast<int>(args.arg));
      return Done(0);
    default:
      return Refuse(MVMM_EINVAL, "unknown cmd");
  }
}

}  // namespace minivmm::hc
