// flush_tlb_others(mask): KVM's paravirtual TLB flush, decided by the VMM.
// Order: a vCPU directory is wired (-ENOSYS), mask not 0 (-EINVAL), no bit
// at or above the VM's vCPU count (-EINVAL), not the caller's own bit
// (-EINVAL: a vCPU flushes its own TLB itself), every target has a
// registered run-state area (-EINVAL). Only then, for each target, lowest
// first: MVMM_RUNSTATE_FLUSH_TLB is ORed atomically into its run state's
// `flags` (the guest takes it with an atomic exchange), and a target that is
// running (not VcpuDirectory::Blocked) also gets MVMM_IPI_VECTOR, whose
// handler sees the flag; a blocked or halted one is left asleep and flushes
// when it next runs. Called under the big lock, the same lock Block() marks a
// vCPU blocked under, so no target changes between the test and the kick.
// Returns the number of targets kicked; the dispatcher counts every target
// as a `tlb_flush` operation and the others as deferred
// (ExitStats::tlb_flushes_deferred).
#include <cstddef>

#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/cpu_mask.h"
#include "hypercalls/handlers/handlers.h"
#include "minivmm_abi/boot.h"

namespace minivmm::hc {

HypercallResult flush_tlb_others(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_flush_tlb_others>(raw);
  const HypercallResult targets = CheckCpuMask(env.cpus, args.mask);
  if (!targets.ok()) return targets;
  const uint32_t self = env.exit.vcpu_id;
  if (self < 64 && (args.mask >> self & 1) != 0)
    return Refuse(MVMM_EINVAL, "the caller's own vCPU is in the mask");
  bool all_registered = true;
  ForEachCpu(args.mask, [&](uint32_t cpu) {
    const std::optional<uint64_t> area = env.cpus->RunstateGpa(cpu);
    // A registered area is 8-byte aligned and inside RAM (vcpu_op), so its
    // flags word is too; checked again rather than trusted.
    all_registered = all_registered && area.has_value() &&
                     GuestAddress(*area).IsAligned(MVMM_VCPU_RUNSTATE_ALIGN) &&
                     env.memory.Contains(GuestAddress(*area), sizeof(mvmm_vcpu_runstate));
  });
  if (!all_registered) return Refuse(MVMM_EINVAL, "a target has no run-state area");
  uint64_t kicked = 0;
  ForEachCpu(args.mask, [&](uint32_t cpu) {
    const GuestAddress flags =
        GuestAddress(*env.cpus->RunstateGpa(cpu)) + offsetof(mvmm_vcpu_runstate, flags);
    // Cannot fail: aligned and inside RAM (checked above).
    static_cast<void>(env.memory.AtomicOr32(flags, MVMM_RUNSTATE_FLUSH_TLB));
    if (!env.cpus->Blocked(cpu)) {
      env.cpus->SendIpi(self, cpu);
      ++kicked;
    }
  });
  return Done(kicked);
}

}  // namespace minivmm::hc
