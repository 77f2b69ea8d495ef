// write_cr0(value): the guest's `mov %reg, %cr0`. Only MP, EM and TS may
// differ from the current CR0 (PE, PG, WP, NE, CD, NW, ... belong to the VMM:
// turning paging or protection off would break the VMM's boot invariants);
// any other difference is -EPERM and nothing changes. Returns 0. Like
// fpu_taskswitch, an unchanged value is not written, and a TS change reads
// the FPU fingerprint when the wasted-exit analysis is on.
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"

namespace minivmm::hc {

HypercallResult write_cr0(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_write_cr0>(raw);
  VcpuState& vcpu = env.exit.vcpu;
  const uint64_t cr0 = vcpu.Cr0();
  const uint64_t changed = args.value ^ cr0;
  if ((changed & ~MVMM_CR0_GUEST_WRITABLE) != 0) {
    return Refuse(MVMM_EPERM, "would change CR0 bits other than MP, EM, TS");
  }
  if (changed != 0) vcpu.SetCr0(args.value);
  NoteCr0Op(env, MVMM_HC_write_cr0, raw,
            changed == 0               ? OpEffect::kUnchanged
            : changed != MVMM_CR0_TS   ? OpEffect::kChanged
            : args.value & MVMM_CR0_TS ? OpEffect::kTsSet
                                       : OpEffect::kTsClear);
  return Done(0);
}

}  // namespace minivmm::hc
