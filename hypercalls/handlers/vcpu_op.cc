// vcpu_op(cmd, vcpu, gpa): per-vCPU operations; the one command is
// MVMM_VCPUOP_REGISTER_VCPU_INFO, which makes the struct mvmm_vcpu_info at
// guest-physical `gpa` the calling vCPU's shared interrupt flag
// (minivmm_abi/boot.h). Order: cmd known (-EINVAL), vcpu is 0, the only vCPU
// a guest registers for (-ENOENT), gpa 64-byte aligned (-EINVAL), the whole
// struct inside guest RAM (-EFAULT), not registered yet (-EINVAL: Xen too
// refuses a second registration). Then clears evtchn_upcall_pending (the
// VMM's byte: nothing is held back for the guest yet), leaves the guest's
// mask as it is and records the address in RunControl; the run loop reads
// it from the next exit on. Returns 0.
#include <cstddef>

#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"
#include "minivmm_abi/boot.h"

namespace minivmm::hc {

HypercallResult vcpu_op(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = VcpuOpArgs::From(raw);
  if (args.cmd != MVMM_VCPUOP_REGISTER_VCPU_INFO) return Refuse(MVMM_EINVAL, "unknown cmd");
  if (args.vcpu != 0) return Refuse(MVMM_ENOENT, "no such vCPU");
  if (!args.gpa.IsAligned(MVMM_VCPU_INFO_ALIGN))
    return Refuse(MVMM_EINVAL, "vcpu_info not 64-byte aligned");
  if (!env.memory.Contains(args.gpa, sizeof(mvmm_vcpu_info)))
    return Refuse(MVMM_EFAULT, "vcpu_info outside guest RAM");
  RunControl& control = env.exit.control;
  if (control.vcpu_info_gpa.has_value()) return Refuse(MVMM_EINVAL, "vcpu_info already registered");
  const uint8_t none = 0;
  if (!env.memory.WriteObj(args.gpa + offsetof(mvmm_vcpu_info, evtchn_upcall_pending), none))
    return Refuse(MVMM_EFAULT, "vcpu_info outside guest RAM");  // checked above
  control.vcpu_info_gpa = args.gpa.value();
  return Done(0);
}

}  // namespace minivmm::hc
