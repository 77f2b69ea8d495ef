#include "vmm/machine/kvm_irqchip.h"

#include "absl/strings/str_format.h"
#include "vmm/boot/bios_state.h"
#include "vmm/core/status_macros.h"

namespace minivmm {

absl::Status KvmIrqchip::Build(KvmVm& vm) {
  if (absl::Status irqchip = vm.CreateIrqchip(); !irqchip.ok())
    return absl::Status(irqchip.code(), absl::StrFormat("the %s machine cannot run here: %s",
                                                        machine_, irqchip.message()));
  vm_ = &vm;
  RETURN_IF_ERROR(vm.RouteIsaIrqsAsPc());
  if (pit_) {
    if (absl::Status pit = vm.CreatePit(); !pit.ok())
      return absl::Status(pit.code(), absl::StrFormat("no PIT here: %s", pit.message()));
  }
  return absl::OkStatus();
}

absl::Status KvmIrqchip::SetBiosState(bool at_boot) {
  RETURN_IF_ERROR(vm_->ProgramPics(kBiosPicMaster, kBiosPicSlave));
  if (at_boot && pit_) RETURN_IF_ERROR(vm_->ProgramPitChannel0(kBiosPitMode, kBiosPitCount));
  return absl::OkStatus();
}

void KvmIrqchip::SetLevel(uint32_t irq, bool high) {
  if (!vm_->SetIrqLine(irq, high).ok()) ++irq_line_failures_;
}

std::vector<std::string> KvmIrqchip::notes() const {
  if (irq_line_failures_ == 0) return {};
  return {absl::StrFormat("KVM_IRQ_LINE failed %u times (devices' interrupt lines)",
                          irq_line_failures_)};
}

}  // namespace minivmm
