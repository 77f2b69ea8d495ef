// vcpu_op(cmd, vcpu, arg): per-vCPU operations, each for the calling vCPU.
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
//
// MVMM_VCPUOP_SET_PERIODIC_TIMER sets the calling vCPU's periodic timer to
// interrupt it every `arg` ns from now on; MVMM_VCPUOP_STOP_PERIODIC_TIMER
// stops it (`arg` ignored). Order, after cmd: vcpu is the calling vCPU
// (-EINVAL, as Xen's check that the target is the current vCPU), a set's
// period within [MVMM_PERIODIC_TIMER_MIN_NS, MVMM_PERIODIC_TIMER_MAX_NS]
// (-EINVAL), a timer wired that has a periodic timer for this vCPU
// (-ENOSYS). Every check comes before the timer is touched. Returns 0.
#include <cstddef>
#include <optional>

#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"
#include "minivmm_abi/boot.h"

namespace minivmm::hc {
namespace {

// The refusals of one kind of shared area.
struct AreaReasons {
  const char* not_aligned;
  const char* outside;
  const char* again;
};

// Registers the guest's `T` at `gpa` in `slot`, once: `align`-aligned
// (-EINVAL), inside RAM (-EFAULT), not registered before (-EINVAL); then
// writes `initial` at offset `at` of it and records it.
template <typename T, typename Init>
HypercallResult Register(HypercallEnv& env, GuestAddress gpa, uint64_t align,
                         std::optional<uint64_t>& slot, size_t at, const Init& initial,
                         const AreaReasons& why) {
  if (!gpa.IsAligned(align)) return Refuse(MVMM_EINVAL, why.not_aligned);
  if (!env.memory.Contains(gpa, sizeof(T))) return Refuse(MVMM_EFAULT, why.outside);
  if (slot.has_value()) return Refuse(MVMM_EINVAL, why.again);
  if (!env.memory.WriteObj(gpa + at, initial))
    return Refuse(MVMM_EFAULT, why.outside);  // checked above
  slot = gpa.value();
  return Done(0);
}

// set_periodic_timer (a period) and stop_periodic_timer (none).
HypercallResult PeriodicTimer(HypercallEnv& env, uint64_t vcpu, std::optional<uint64_t> period_ns) {
  if (vcpu != env.exit.vcpu_id) return Refuse(MVMM_EINVAL, "not the calling vCPU");
  if (period_ns &&
      (*period_ns < MVMM_PERIODIC_TIMER_MIN_NS || *period_ns > MVMM_PERIODIC_TIMER_MAX_NS))
    return Refuse(MVMM_EINVAL, "period outside 1 ms to 1 hour");
  if (env.timer == nullptr || !env.timer->SetPeriodic(env.exit.vcpu_id, period_ns.value_or(0)))
    return Refuse(MVMM_ENOSYS, "no periodic timer for this vCPU");
  return Done(0);
}

}  // namespace

HypercallResult vcpu_op(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_vcpu_op>(raw);
  // `arg` is a period (set_periodic_timer) or a guest-physical address
  // (register_*).
  if (args.cmd == MVMM_VCPUOP_SET_PERIODIC_TIMER) return PeriodicTimer(env, args.vcpu, args.arg);
  if (args.cmd == MVMM_VCPUOP_STOP_PERIODIC_TIMER)
    return PeriodicTimer(env, args.vcpu, std::nullopt);
  if (args.cmd != MVMM_VCPUOP_REGISTER_VCPU_INFO && args.cmd != MVMM_VCPUOP_REGISTER_RUNSTATE_AREA)
    return Refuse(MVMM_EINVAL, "unknown cmd");
  if (args.vcpu != env.exit.vcpu_id) return Refuse(MVMM_ENOENT, "no such vCPU");
  RunControl& control = env.exit.control;
  if (args.cmd == MVMM_VCPUOP_REGISTER_VCPU_INFO) {
    // Nothing pending yet; the mask is the guest's.
    return Register<mvmm_vcpu_info>(env, GuestAddress(args.arg), MVMM_VCPU_INFO_ALIGN,
                                    control.vcpu_info_gpa,
                                    offsetof(mvmm_vcpu_info, evtchn_upcall_pending), uint8_t{0},
                                    {"vcpu_info not 64-byte aligned", "vcpu_info outside guest RAM",
                                     "vcpu_info already registered"});
  }
  return Register<mvmm_vcpu_runstate>(
      env, GuestAddress(args.arg), MVMM_VCPU_RUNSTATE_ALIGN, control.runstate_gpa, 0,
      mvmm_vcpu_runstate{MVMM_RUNSTATE_RUNNING, 0},
      {"runstate area not 8-byte aligned", "runstate area outside guest RAM",
       "runstate area already registered"});
}

}  // namespace minivmm::hc
