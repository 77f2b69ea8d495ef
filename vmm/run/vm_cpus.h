// The vCPUs of one VM as each other's run loops and the IPI hypercalls see
// them (VcpuDirectory): each vCPU's signals, its run control (for the
// registered run-state area) and whether it sleeps. Owned by Vm::Run for the
// length of a run. Every member is used while one exit is handled, under the
// VM's big lock when there are several vCPUs (run_loop.h), so the sleep
// states are never read while they change.
//
// It also decides the one VM-wide halting rule: the run stops as "halted
// forever" when every vCPU sleeps and nothing can wake any of them
// (docs/design.md "Several vCPUs").
#ifndef MINIVMM_VMM_RUN_VM_CPUS_H_
#define MINIVMM_VMM_RUN_VM_CPUS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "minivmm/run_control.h"
#include "minivmm/vcpu_directory.h"
#include "vmm/run/vm_signals.h"

namespace minivmm {

class VmCpus final : public VcpuDirectory {
 public:
  enum class Sleep : uint8_t {
    kAwake,     // in the guest or handling an exit
    kBlocked,   // sched_op(block), or HLT with IF=1: an interrupt ends it
    kHalted,    // HLT with IF=0: nothing but the VM's stop ends it
    kLockWait,  // lock_wait: a lock_kick or an interrupt ends it
  };

  // One entry per vCPU, indexed by number. A null entry stands for a vCPU
  // this directory cannot reach (a run loop tested on its own): always
  // awake, and IPIs to it go nowhere.
  explicit VmCpus(std::vector<VmSignals*> signals);

  // vCPU `cpu`'s run loop tells where its run control lives.
  void Attach(uint32_t cpu, const RunControl* control) { cpus_[cpu].control = control; }
  void SetSleep(uint32_t cpu, Sleep sleep) { cpus_[cpu].sleep = sleep; }

  // True when no vCPU is awake and none can be woken: no interrupt pending
  // on a blocked one, no kick pending on one in lock_wait, and none of a
  // blocked one's own timers that could fire (`timer_can_fire(cpu)`; empty:
  // no timers).
  bool NothingCanWakeAny(const std::function<bool(uint32_t cpu)>& timer_can_fire) const;

  uint32_t count() const override { return static_cast<uint32_t>(cpus_.size()); }
  std::optional<uint64_t> RunstateGpa(uint32_t cpu) const override;
  bool Blocked(uint32_t cpu) const override { return cpus_[cpu].sleep != Sleep::kAwake; }
  void SendIpi(uint32_t from, uint32_t cpu) override;
  void LockKick(uint32_t from, uint32_t cpu) override;

 private:
  struct Cpu {
    VmSignals* signals = nullptr;
    const RunControl* control = nullptr;
    Sleep sleep = Sleep::kAwake;
  };
  std::vector<Cpu> cpus_;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_RUN_VM_CPUS_H_
