// fpu_taskswitch(set): set (1) or clear (0) CR0.TS, Xen's stts/clts. Any
// other value is -EINVAL (Xen treats non-zero as 1; we refuse it so a guest
// bug shows up). Returns 0. CR0 goes through VcpuState: with KVM_CAP_SYNC_REGS
// a change marks sregs dirty and costs no ioctl; an unchanged CR0 is not
// written at all, so a redundant stts/clts does not pay for an sregs sync.
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"

namespace minivmm::hc {

HypercallResult fpu_taskswitch(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = FpuTaskswitchArgs::From(raw);
  if (args.set > 1) return Refuse(MVMM_EINVAL, "set is neither 0 nor 1");
  VcpuState& vcpu = env.exit.vcpu;
  const uint64_t cr0 = vcpu.Cr0();
  const uint64_t next = args.set ? (cr0 | MVMM_CR0_TS) : (cr0 & ~MVMM_CR0_TS);
  if (next != cr0) vcpu.SetCr0(next);
  return Done(0);
}

}  // namespace minivmm::hc
