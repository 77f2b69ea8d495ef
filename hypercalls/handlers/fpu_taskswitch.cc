// fpu_taskswitch(set, reason): set (1) or clear (0) CR0.TS, Xen's stts/clts.
// Any other `set` is -EINVAL (Xen treats non-zero as 1; we refuse it so a
// guest bug shows up). `reason` is MVMM_TS_CLEAR_PLAIN (0), or for a clear
// MVMM_TS_CLEAR_FOR_NM (1) when the #NM handler clears TS for an FPU use;
// anything else is -EINVAL. Returns 0. CR0 goes through VcpuState: with KVM_CAP_SYNC_REGS
// a change marks sregs dirty and costs no ioctl; an unchanged CR0 is not
// written at all, so a redundant stts/clts does not pay for an sregs sync.
// With the wasted-exit analysis on (and only then), a TS set or plain clear
// also reads the vCPU's FPU fingerprint for it (vmm/core/waste.h).
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"

namespace minivmm::hc {

HypercallResult fpu_taskswitch(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_fpu_taskswitch>(raw);
  if (args.set > 1) return Refuse(MVMM_EINVAL, "set is neither 0 nor 1");
  if (args.reason > (args.set ? MVMM_TS_CLEAR_PLAIN : MVMM_TS_CLEAR_FOR_NM))
    return Refuse(MVMM_EINVAL, "unknown reason for the TS change");
  VcpuState& vcpu = env.exit.vcpu;
  const uint64_t cr0 = vcpu.Cr0();
  const uint64_t next = args.set ? (cr0 | MVMM_CR0_TS) : (cr0 & ~MVMM_CR0_TS);
  if (next != cr0) vcpu.SetCr0(next);
  NoteCr0Op(env, MVMM_HC_fpu_taskswitch, raw,
            next == cr0                           ? OpEffect::kUnchanged
            : args.set                            ? OpEffect::kTsSet
            : args.reason == MVMM_TS_CLEAR_FOR_NM ? OpEffect::kTsClearForFpu
                                                  : OpEffect::kTsClear);
  return Done(0);
}

}  // namespace minivmm::hc
