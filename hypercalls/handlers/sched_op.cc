// sched_op(cmd, arg): 0 yield, 1 block until an interrupt, 2 shutdown with
// exit code `arg` (0..255), 3 yield_to vCPU `arg`. Order: cmd known
// (-EINVAL), then for shutdown arg <= 255 (-EINVAL), for yield_to a vCPU
// directory (-ENOSYS), arg < the vCPU count and not the caller (-EINVAL).
// yield_to is a yield to the host scheduler like cmd 0 (the VMM cannot pick
// the host thread that runs next); it differs in what it is counted as. Returns 0; the request
// takes effect when the run loop reads RunControl after this exit (for a multicall: after the whole
// batch). A pending shutdown is never downgraded by a later yield or block in the same batch: the
// guest asked to stop and must stop; nor does a later shutdown change its code (the first accepted
// code stands, as Xen keeps a domain's first shutdown reason).
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"

namespace minivmm::hc {
namespace {

void Request(RunControl& control, VcpuRequest request) {
  if (control.request != VcpuRequest::kShutdown) control.request = request;
}

}  // namespace

HypercallResult sched_op(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_sched_op>(raw);
  RunControl& control = env.exit.control;
  switch (args.cmd) {
    case MVMM_SCHEDOP_YIELD:
      Request(control, VcpuRequest::kYield);
      return Done(0);
    case MVMM_SCHEDOP_BLOCK:
      Request(control, VcpuRequest::kBlock);
      return Done(0);
    case MVMM_SCHEDOP_YIELD_TO:
      if (env.cpus == nullptr) return Refuse(MVMM_ENOSYS, "no vCPU directory");
      if (args.arg >= env.cpus->count()) return Refuse(MVMM_EINVAL, "no such vCPU");
      if (args.arg == env.exit.vcpu_id) return Refuse(MVMM_EINVAL, "a yield to the caller itself");
      Request(control, VcpuRequest::kYield);
      return Done(0);
    case MVMM_SCHEDOP_SHUTDOWN:
      if (args.arg > 255) return Refuse(MVMM_EINVAL, "exit code above 255");
      if (control.request != VcpuRequest::kShutdown) control.Shutdown(static_cast<int>(args.arg));
      return Done(0);
    default:
      return Refuse(MVMM_EINVAL, "unknown cmd");
  }
}

}  // namespace minivmm::hc
