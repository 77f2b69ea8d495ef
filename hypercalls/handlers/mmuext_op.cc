// mmuext_op(ops_gpa, count): Xen's extended MMU operations, each
// `{u32 cmd; u32 reserved; u64 arg1; u64 arg2}` (mmuext_policy.h decides
// what is allowed). The one command is NEW_BASEPTR: load CR3 with frame
// `arg1`.
// Order: count <= MVMM_MMUEXT_OP_MAX_OPS (-E2BIG; this bound also makes
// count * 24 unable to wrap), count == 0 is a no-op returning 0 (the list is
// not looked at, as for mmu_update), the whole list inside RAM (-EFAULT); the
// list is then copied once into a host buffer. Every op is checked before
// any runs: ALL OR NOTHING, unlike mmu_update. A refused op makes the call
// return that op's -errno (the first refused one, in list order) and nothing
// changes; otherwise the ops run in order and the call returns count.
// (Xen stops at the first failure and reports the ops done through `pdone`;
// a batch of base-pointer loads has no useful partial result, since only the
// last one survives, so a bad batch changes nothing here.)
// CR3 goes through VcpuState: with KVM_CAP_SYNC_REGS the write marks sregs
// dirty and reaches KVM on the next KVM_RUN, whether the op was a direct
// call or a multicall entry. Every accepted op writes CR3, even with an
// unchanged value (a base-pointer load is also a TLB flush).
#include <array>
#include <span>

#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"
#include "hypercalls/mmuext_policy.h"

namespace minivmm::hc {

HypercallResult mmuext_op(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_mmuext_op>(raw);
  if (args.count > MVMM_MMUEXT_OP_MAX_OPS) {
    return Refuse(MVMM_E2BIG, "count above MVMM_MMUEXT_OP_MAX_OPS");
  }
  if (args.count == 0) return Done(0);
  std::array<mvmm_mmuext_op, MVMM_MMUEXT_OP_MAX_OPS> buffer;  // 12 KiB, bounded
  const std::span<mvmm_mmuext_op> ops(buffer.data(), args.count);
  if (!env.memory.Read(args.ops, ops)) return Refuse(MVMM_EFAULT, "op list outside RAM");

  const uint64_t ram_size = env.memory.size();
  for (const mvmm_mmuext_op& op : ops) {
    const HypercallResult check = CheckMmuextOp(op, ram_size);
    if (!check.ok()) return check;
  }
  for (const mvmm_mmuext_op& op : ops) {
    const uint64_t cr3 = BasePtrCr3(op);
    NoteHypercallOp(env, MVMM_HC_mmuext_op, raw,
                    env.exit.vcpu.Cr3() == cr3 ? OpEffect::kUnchanged : OpEffect::kChanged);
    env.exit.vcpu.SetCr3(cr3);
  }
  return Done(args.count);
}

}  // namespace minivmm::hc
