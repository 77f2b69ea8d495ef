// The `pc` machine's chipset (pc_chipset.h): KVM's full in-kernel irqchip.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "vmm/boot/bios_state.h"
#include "vmm/core/status_macros.h"
#include "vmm/machine/pc_chipset.h"

namespace minivmm {
namespace {

class I440fxChipset final : public PcChipset {
 public:
  explicit I440fxChipset(bool pit) : pit_(pit) {}

  absl::Status Build(Vm::State& s) override {
    if (absl::Status irqchip = s.vm.CreateIrqchip(); !irqchip.ok())
      return absl::Status(irqchip.code(),
                          absl::StrFormat("the pc machine cannot run here: %s", irqchip.message()));
    vm_ = &s.vm;
    RETURN_IF_ERROR(s.vm.RouteIsaIrqsAsPc());
    if (pit_) {
      if (absl::Status pit = s.vm.CreatePit(); !pit.ok())
        return absl::Status(pit.code(), absl::StrFormat("no PIT here: %s", pit.message()));
    }
    return absl::OkStatus();
  }

  absl::Status SetBiosState(bool at_boot) override {
    RETURN_IF_ERROR(vm_->ProgramPics(kBiosPicMaster, kBiosPicSlave));
    if (at_boot && pit_) RETURN_IF_ERROR(vm_->ProgramPitChannel0(kBiosPitMode, kBiosPitCount));
    return absl::OkStatus();
  }

  void DescribeIn(AcpiMachine& /*acpi*/) const override {}

  // ISA IRQ `irq` as GSI `irq` (RouteIsaIrqsAsPc): KVM_IRQ_LINE.
  void SetLevel(uint32_t irq, bool high) override {
    if (!vm_->SetIrqLine(irq, high).ok()) ++irq_line_failures_;
  }

  std::vector<std::string> notes() const override {
    if (irq_line_failures_ == 0) return {};
    return {absl::StrFormat("KVM_IRQ_LINE failed %u times (pc-testdev's IRQ lines)",
                            irq_line_failures_)};
  }

 private:
  const bool pit_;
  KvmVm* vm_ = nullptr;
  uint64_t irq_line_failures_ = 0;
};

}  // namespace

std::unique_ptr<PcChipset> MakeI440fxChipset(const VmConfig& config) {
  return std::make_unique<I440fxChipset>(config.pit);
}

}  // namespace minivmm
