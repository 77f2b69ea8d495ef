// vcpu_op(cmd, vcpu, gpa): per-vCPU operations, each for the calling vCPU.
//
// MVMM_VCPUOP_REGISTER_VCPU_INFO makes the struct mvmm_vcpu_info at
// guest-physical `gpa` the calling vCPU's shared interrupt flag
// (minivmm_abi/boot.h). Order: cmd known (-EINVAL), vcpu is the calling
// vCPU, the only vCPU a guest registers for (-ENOENT), gpa 64-byte aligned
// (-EINVAL), the whole struct inside guest RAM (-EFAULT), not registered yet
// (-EINVAL: Xen too refuses a second registration). Then clears
// evtchn_upcall_pending (the VMM's byte: nothing is held back for the guest
// yet), leaves the guest's mask as it is and records the address in
// RunControl; the run loop reads it from the next exit on. Returns 0.
//
// MVMM_VCPUOP_REGISTER_RUNSTATE_AREA makes the struct mvmm_vcpu_runstate at
// `gpa` the calling vCPU's run state: the same checks (8-byte alignment),
// then writes MVMM_RUNSTATE_RUNNING and flags 0 into it and records the
// address; the run loop updates the state when the vCPU blocks and wakes,
// another vCPU's flush_tlb_others sets MVMM_RUNSTATE_FLUSH_TLB in the flags.
// Returns 0.
#include <cstddef>

#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"
#include "minivmm_abi/boot.h"

namespace minivmm::hc {
namespace {

HypercallResult RegisterVcpuInfo(HypercallEnv& env, GuestAddress gpa) {
  if (!gpa.IsAligned(MVMM_VCPU_INFO_ALIGN))
    return Refuse(MVMM_EINVAL, "vcpu_info not 64-byte aligned");
  if (!env.memory.Contains(gpa, sizeof(mvmm_vcpu_info)))
    return Refuse(MVMM_EFAULT, "vcpu_info outside guest RAM");
  RunControl& control = env.exit.control;
  if (control.vcpu_info_gpa.has_value()) return Refuse(MVMM_EINVAL, "vcpu_info already registered");
  const uint8_t none = 0;
  if (!env.memory.WriteObj(gpa + offsetof(mvmm_vcpu_info, evtchn_upcall_pending), none))
    return Refuse(MVMM_EFAULT, "vcpu_info outside guest RAM");  // checked above
  control.vcpu_info_gpa = gpa.value();
  return Done(0);
}

HypercallResult RegisterRunstateArea(HypercallEnv& env, GuestAddress gpa) {
  if (!gpa.IsAligned(MVMM_VCPU_RUNSTATE_ALIGN))
    return Refuse(MVMM_EINVAL, "runstate area not 8-byte aligned");
  if (!env.memory.Contains(gpa, sizeof(mvmm_vcpu_runstate)))
    return Refuse(MVMM_EFAULT, "runstate area outside guest RAM");
  RunControl& control = env.exit.control;
  if (control.runstate_gpa.has_value())
    return Refuse(MVMM_EINVAL, "runstate area already registered");
  const mvmm_vcpu_runstate running = {MVMM_RUNSTATE_RUNNING, 0};
  if (!env.memory.WriteObj(gpa, running))
    return Refuse(MVMM_EFAULT, "runstate area outside guest RAM");  // checked above
  control.runstate_gpa = gpa.value();
  return Done(0);
}

}  // namespace

HypercallResult vcpu_op(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = VcpuOpArgs::From(raw);
  if (args.cmd != MVMM_VCPUOP_REGISTER_VCPU_INFO && args.cmd != MVMM_VCPUOP_REGISTER_RUNSTATE_AREA)
    return Refuse(MVMM_EINVAL, "unknown cmd");
  if (args.vcpu != env.exit.vcpu_id) return Refuse(MVMM_ENOENT, "no such vCPU");
  if (args.cmd == MVMM_VCPUOP_REGISTER_VCPU_INFO) return RegisterVcpuInfo(env, args.gpa);
  return RegisterRunstateArea(env, args.gpa);
}

}  // namespace minivmm::hc
