// force_evtchn_callback(): Xen's number 17 (xen_version), the call Linux's
// xen_force_evtchn_callback makes after clearing evtchn_upcall_mask found
// evtchn_upcall_pending set. Its arguments are ignored (Linux passes 0, NULL).
// The handler only checks that a vcpu_info is registered (-EINVAL otherwise)
// and returns 0: the exit itself is the point. Right after it the run loop
// finds the interrupt it holds back, the mask clear and RFLAGS.IF set, and
// injects it before the guest's next instruction. Counted as IF set.
#include "hypercalls/handlers/handlers.h"

namespace minivmm::hc {

HypercallResult force_evtchn_callback(HypercallEnv& env, const HypercallArgs&) {
  if (!env.exit.control.vcpu_info_gpa.has_value())
    return Refuse(MVMM_EINVAL, "no vcpu_info registered");
  return Done(0);
}

}  // namespace minivmm::hc
