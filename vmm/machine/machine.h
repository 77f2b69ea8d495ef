// A machine model (docs/machines.md): its boot protocol, its devices and its
// interrupt model, one builder per MachineKind (minivmm/machine.h) behind
// this interface. Vm::Create maps RAM and creates the KVM VM, then lets the
// machine build itself (Build), then creates each vCPU and lets the machine
// give it its CPUID and power-on state (SetUpVcpu); Vm::Run asks it what the
// run loops need. Nothing outside the builders tests which machine it is.
#ifndef MINIVMM_VMM_MACHINE_MACHINE_H_
#define MINIVMM_VMM_MACHINE_MACHINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "minivmm/vm.h"
#include "vmm/core/hyperv_host.h"
#include "vmm/core/ioapic_eoi.h"
#include "vmm/core/vcpu_identity.h"
#include "vmm/kvm/vcpu.h"

namespace minivmm {

class Machine {
 public:
  virtual ~Machine() = default;

  // Before any vCPU exists, with RAM mapped at 0 (memslot 0): the machine's
  // other memory and KVM devices, the guest image (untrusted: refused with
  // the file's name before anything runs), the boot structures, and its
  // devices on the VM's buses.
  virtual absl::Status Build(Vm::State& s, std::span<const uint8_t> image) = 0;
  // vCPU `cpu` right after KVM_CREATE_VCPU: its CPUID and power-on state.
  virtual absl::Status SetUpVcpu(Vm::State& s, KvmVcpu& vcpu, uint32_t cpu) = 0;

  // What the run loops need. The GDT page the hypercall handlers write
  // (empty: none); the GDT base and TR each vCPU must keep (none: not
  // checked); whether the interrupt model is the VMM's own
  // (RunLoopParts::own_interrupts).
  virtual std::span<uint8_t> gdt() { return {}; }
  virtual std::optional<VcpuIdentity> Identity(uint32_t /*cpu*/) const { return std::nullopt; }
  virtual bool own_interrupts() const = 0;
  // The machine's side of Hyper-V's SynIC (RunLoopParts::hyperv); null: none.
  virtual HypervHost* hyperv_host() { return nullptr; }
  // The machine's own IOAPIC's EOIs (RunLoopParts::ioapic_eoi); null: none.
  virtual IoapicEoiSink* ioapic_eoi() { return nullptr; }
  // What the machine's devices noted during the run (RunResult::notes).
  virtual std::vector<std::string> notes() const { return {}; }
  // Calls `end_phase` (on the guest's thread) wherever this machine's guest
  // says it finished something, naming it: VmConfig::kernel_exits' phases
  // (docs/run-record.md "kernel_exits").
  virtual void EndPhasesWith(Vm::State& s, std::function<void(const std::string&)> end_phase) = 0;
};

// The machine `config.machine` names, once its fields that concern one
// machine only are checked against it (InvalidArgument naming the field)
// and its defaults filled in (the built-in guest as the kernel).
absl::StatusOr<std::unique_ptr<Machine>> MakeMachine(VmConfig& config);

// The builders MakeMachine chooses from (builtin_machine.cc, pc_machine.cc).
absl::StatusOr<std::unique_ptr<Machine>> MakeBuiltinMachine(VmConfig& config);
absl::StatusOr<std::unique_ptr<Machine>> MakePcMachine(VmConfig& config);

}  // namespace minivmm

#endif  // MINIVMM_VMM_MACHINE_MACHINE_H_
