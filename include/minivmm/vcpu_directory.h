// The other vCPUs of the VM, as a hypercall handler reaches them (send_ipi,
// flush_tlb_others, lock_kick, yield_to). The library implements it over its per-vCPU signals
// and run state (vmm/run/vm_cpus.h); tests pass a fake. Every call is made
// while one exit is handled, under the VM's big lock when there are several
// vCPUs, so what it reports cannot change during the call.
#ifndef MINIVMM_VCPU_DIRECTORY_H_
#define MINIVMM_VCPU_DIRECTORY_H_

#include <cstdint>
#include <optional>

namespace minivmm {

class VcpuDirectory {
 public:
  virtual ~VcpuDirectory() = default;

  // The number of vCPUs (VmConfig::cpus): valid numbers are 0 .. count() - 1.
  virtual uint32_t count() const = 0;

  // The guest-physical address of vCPU `cpu`'s registered run-state area
  // (vcpu_op register_runstate_area: 8-byte aligned, inside RAM), or none.
  virtual std::optional<uint64_t> RunstateGpa(uint32_t cpu) const = 0;

  // True when vCPU `cpu` is blocked or halted: it marked itself so before it
  // released the big lock to sleep, and has not taken the lock back since.
  // Such a vCPU is not in the guest and enters it only after it woke.
  virtual bool Blocked(uint32_t cpu) const = 0;

  // Makes MVMM_IPI_VECTOR pending on vCPU `cpu` on behalf of vCPU `from`: a
  // blocked target is woken, a running one other than `from` kicked out of
  // the guest. One already pending merges with it. `cpu` < count().
  virtual void SendIpi(uint32_t from, uint32_t cpu) = 0;

  // lock_kick: makes a kick pending on vCPU `cpu` on behalf of vCPU `from`
  // (never `cpu` itself) and wakes `cpu` if it sleeps in lock_wait. One
  // already pending merges with it. A running target is not forced out of
  // the guest: the kick waits for its next lock_wait. `cpu` < count().
  virtual void LockKick(uint32_t from, uint32_t cpu) = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_VCPU_DIRECTORY_H_
