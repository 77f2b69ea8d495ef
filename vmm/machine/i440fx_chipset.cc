// The `pc` machine's chipset (pc_chipset.h): KVM's full in-kernel irqchip
// (kvm_irqchip.h), and nothing else: no PCI.
#include <memory>
#include <string>
#include <vector>

#include "vmm/machine/kvm_irqchip.h"
#include "vmm/machine/pc_chipset.h"

namespace minivmm {
namespace {

class I440fxChipset final : public PcChipset {
 public:
  explicit I440fxChipset(bool pit) : irqchip_("pc", pit) {}

  absl::Status Build(Vm::State& s) override { return irqchip_.Build(s.vm); }
  absl::Status SetBiosState(bool at_boot) override { return irqchip_.SetBiosState(at_boot); }
  void DescribeIn(AcpiMachine& /*acpi*/) const override {}
  // ISA IRQ `irq` as GSI `irq`.
  void SetLevel(uint32_t irq, bool high) override { irqchip_.SetLevel(irq, high); }
  std::vector<std::string> notes() const override { return irqchip_.notes(); }

 private:
  KvmIrqchip irqchip_;
};

}  // namespace

std::unique_ptr<PcChipset> MakeI440fxChipset(const VmConfig& config) {
  return std::make_unique<I440fxChipset>(config.pit);
}

}  // namespace minivmm
