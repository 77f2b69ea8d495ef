// lock_kick(cpu): the unlocker of a paravirtual spinlock wakes one waiter.
// Order: a vCPU directory is wired (-ENOSYS), cpu < the vCPU count (-EINVAL),
// cpu is not the caller (-EINVAL). Then the kick is made pending on `cpu`
// (VcpuDirectory::LockKick: one already pending merges with it) and a vCPU
// asleep in lock_wait is woken. Returns 0.
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"

namespace minivmm::hc {

HypercallResult lock_kick(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_lock_kick>(raw);
  if (env.cpus == nullptr) return Refuse(MVMM_ENOSYS, "no vCPU directory");
  if (args.cpu >= env.cpus->count()) return Refuse(MVMM_EINVAL, "no such vCPU");
  const uint32_t self = env.exit.vcpu_id;
  if (args.cpu == self) return Refuse(MVMM_EINVAL, "a vCPU cannot kick itself");
  env.cpus->LockKick(self, static_cast<uint32_t>(args.cpu));
  return Done(0);
}

}  // namespace minivmm::hc
