// stack_switch(ss, rsp): set the calling vCPU's TSS.rsp0, the stack that
// vCPU switches to on its next ring-3 -> ring-0 transition (the next task's
// kernel stack); other vCPUs' TSSs are untouched. Order: ss
// is the kernel data selector MVMM_SEL_KERNEL_DS (-EINVAL; in 64-bit mode the
// CPU loads a null SS on that transition, the argument is kept for Xen's
// signature and checked so it cannot lie), rsp canonical (-EINVAL: a
// non-canonical rsp0 would #GP/#SS on every interrupt from user mode), then
// the store into vCPU n's TSS at MVMM_CPU_TSS_GPA(n) through GuestMemory
// (-EFAULT only if RAM were smaller than the boot layout). Returns 0.
#include <cstddef>

#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"
#include "minivmm_abi/boot.h"

namespace minivmm::hc {
namespace {

// 48-bit virtual addresses: bits 63..47 all equal.
bool IsCanonical(uint64_t va) {
  const uint64_t top = va >> 47;
  return top == 0 || top == 0x1FFFF;
}

}  // namespace

HypercallResult stack_switch(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_stack_switch>(raw);
  if (args.ss != MVMM_SEL_KERNEL_DS) return Refuse(MVMM_EINVAL, "ss is not MVMM_SEL_KERNEL_DS");
  if (!IsCanonical(args.rsp)) return Refuse(MVMM_EINVAL, "rsp not canonical");
  const GuestAddress rsp0(MVMM_CPU_TSS_GPA(env.exit.vcpu_id) + offsetof(mvmm_tss, rsp));
  const std::optional<uint64_t> before = env.memory.ReadObj<uint64_t>(rsp0);
  if (!before || !env.memory.WriteObj<uint64_t>(rsp0, args.rsp))
    return Refuse(MVMM_EFAULT, "TSS outside RAM");
  NoteHypercallOp(env, MVMM_HC_stack_switch, raw,
                  *before == args.rsp ? OpEffect::kUnchanged : OpEffect::kChanged);
  return Done(0);
}

}  // namespace minivmm::hc
