// lock_wait(gpa, expected): a paravirtual spinlock's waiter asks to sleep.
// Order: a vCPU directory is wired (-ENOSYS), `gpa` 4-byte aligned (-EINVAL),
// `expected` fits in a u32 (-EINVAL), the u32 at `gpa` inside RAM (-EFAULT).
// A value other than `expected` returns MVMM_LOCK_WAIT_CHANGED at once.
// Otherwise the run loop takes over after this exit (VcpuRequest::kLockWait),
// still under the big lock: it consumes a pending kick
// (MVMM_LOCK_WAIT_KICKED), returns at once when an interrupt is pending
// (MVMM_LOCK_WAIT_INTERRUPT), or sleeps until one of the two arrives, and
// writes the result into RAX. The dispatcher refuses lock_wait as a multicall
// entry, so the request always belongs to this very exit.
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"

namespace minivmm::hc {

HypercallResult lock_wait(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_lock_wait>(raw);
  if (env.cpus == nullptr) return Refuse(MVMM_ENOSYS, "no vCPU directory");
  if (args.word.value() % sizeof(uint32_t) != 0) return Refuse(MVMM_EINVAL, "gpa not 4-aligned");
  if (args.expected > UINT32_MAX) return Refuse(MVMM_EINVAL, "expected is not a u32");
  const std::optional<uint32_t> value = env.memory.ReadObj<uint32_t>(args.word);
  if (!value) return Refuse(MVMM_EFAULT, "gpa outside guest RAM");
  if (*value != args.expected) return Done(MVMM_LOCK_WAIT_CHANGED);
  if (env.exit.control.request != VcpuRequest::kShutdown)
    env.exit.control.request = VcpuRequest::kLockWait;
  return Done(MVMM_LOCK_WAIT_KICKED);  // until the run loop writes the outcome
}

}  // namespace minivmm::hc
