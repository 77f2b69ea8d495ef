// set_if(enable): set (1) or clear (0) RFLAGS.IF of the calling vCPU, the pv
// form of sti/cli/restore_fl. Other values are -EINVAL. Returns the previous
// IF (0 or 1). RFLAGS is part of the synced regs: no ioctl. Delivering an
// interrupt that became deliverable is the run loop's business (it reads IF
// after the exit).
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"

namespace minivmm::hc {

HypercallResult set_if(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_set_if>(raw);
  if (args.enable > 1) return Refuse(MVMM_EINVAL, "enable is neither 0 nor 1");
  VcpuState& vcpu = env.exit.vcpu;
  const uint64_t rflags = vcpu.Get(Reg::kRflags);
  const uint64_t previous = (rflags & MVMM_RFLAGS_IF) ? 1 : 0;
  const uint64_t next = args.enable ? (rflags | MVMM_RFLAGS_IF) : (rflags & ~MVMM_RFLAGS_IF);
  if (next != rflags) vcpu.Set(Reg::kRflags, next);
  NoteHypercallOp(env, MVMM_HC_set_if, raw,
                  next == rflags ? OpEffect::kUnchanged
                  : args.enable  ? OpEffect::kIfEnable
                                 : OpEffect::kIfDisable);
  return Done(previous);
}

}  // namespace minivmm::hc
