// set_segment_base(which, base): the caller's FS base, as Xen's
// HYPERVISOR_set_segment_base(SEGBASE_FS, base), which Linux's
// wrmsr(MSR_FS_BASE) becomes under Xen PV. Order: which is MVMM_SEGBASE_FS
// (-EINVAL; Xen's GS bases and user selector are not offered), base is a
// canonical 48-bit address (-EINVAL: no CPU could hold it). Then the FS base
// is written, the selector left as it is. Returns 0. A base equal to the one
// the vCPU holds is an unchanged write for the wasted-exit analysis.
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"

namespace minivmm::hc {

HypercallResult set_segment_base(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_set_segment_base>(raw);
  if (args.which != MVMM_SEGBASE_FS) return Refuse(MVMM_EINVAL, "not SEGBASE_FS");
  // Canonical: bits 63..47 are all copies of bit 47.
  const uint64_t high = args.base >> 47;
  if (high != 0 && high != (~uint64_t{0} >> 47)) return Refuse(MVMM_EINVAL, "base not canonical");
  VcpuState& vcpu = env.exit.vcpu;
  const bool unchanged = vcpu.FsBase() == args.base;
  if (!unchanged) vcpu.SetFsBase(args.base);
  NoteHypercallOp(env, MVMM_HC_set_segment_base, raw,
                  unchanged ? OpEffect::kUnchanged : OpEffect::kChanged);
  return Done(0);
}

}  // namespace minivmm::hc
