// What the run loop needs of a vCPU: enter the guest and get the decoded
// exit, inject interrupts, be kicked out of the guest. KvmVcpu implements it
// over /dev/kvm; tests implement it with a script of exits (no KVM needed).
#ifndef MINIVMM_VMM_CORE_VCPU_H_
#define MINIVMM_VMM_CORE_VCPU_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "minivmm/vcpu_state.h"
#include "vmm/core/interrupt_rule.h"
#include "vmm/core/vcpu_exit.h"
#include "vmm/core/vcpu_identity.h"

namespace minivmm {

class Vcpu : public VcpuState {
 public:
  // Enters the guest once and returns the decoded exit (RunFailed when
  // KVM_RUN itself fails). Spans inside the exit are valid until the next
  // Run().
  virtual VcpuExit Run() = 0;

  // The raw inputs of the interrupt-readiness rule (vmm/core/interrupt_rule.h,
  // which decides): the synced registers' state and KVM's flags.
  virtual VcpuInterruptState InterruptState() const = 0;
  virtual absl::Status InjectInterrupt(uint32_t vector) = 0;
  // Asks for an IrqWindowOpen exit as soon as the guest can take an interrupt.
  virtual void RequestInterruptWindow(bool on) = 0;

  // Kick() makes the current or next Run() return Interrupted; any thread.
  virtual void Kick() = 0;
  virtual void ClearKick() = 0;

  virtual std::vector<std::pair<std::string, uint64_t>> DumpRegisters() const = 0;

  // The GDT base and TR as the last exit left them (vmm/core/vcpu_identity.h).
  virtual VcpuIdentity Identity() const = 0;

 protected:
  using VcpuState::VcpuState;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_CORE_VCPU_H_
