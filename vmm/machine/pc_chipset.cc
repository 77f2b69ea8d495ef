// MakePcChipset and the configuration each chipset refuses (pc_chipset.h).
#include "vmm/machine/pc_chipset.h"

namespace minivmm {

// The two chipsets (i440fx_chipset.cc, q35_chipset.cc).
std::unique_ptr<PcChipset> MakeI440fxChipset(const VmConfig& config);
std::unique_ptr<PcChipset> MakeQ35Chipset(const VmConfig& config);

std::unique_ptr<PcChipset> MakePcChipset(const VmConfig& config) {
  return config.machine == MachineKind::kQ35 ? MakeQ35Chipset(config) : MakeI440fxChipset(config);
}

absl::Status CheckPcChipsetConfig(const VmConfig& config) {
  if (config.machine == MachineKind::kQ35) {
    if (config.intel_iommu && !config.split_irqchip)
      return absl::InvalidArgumentError(
          "an Intel IOMMU needs the split irqchip (split_irqchip, --split-irqchip): its "
          "interrupt remapping sits between the IOAPIC and the local APICs, and KVM's in-kernel "
          "IOAPIC does not go through it (QEMU: intremap=on needs kernel-irqchip=split)");
    if (config.split_irqchip && config.pit)
      return absl::InvalidArgumentError(
          "a PIT is not on the q35 machine with the split irqchip: KVM's PIT needs KVM's own "
          "IOAPIC and PICs, and the split irqchip's IOAPIC is minivmm's");
    if (config.split_irqchip && config.hyperv_testdev)
      return absl::InvalidArgumentError(
          "hyperv-testdev is not on the q35 machine with the split irqchip: its SINT routes share "
          "KVM's GSI table with the ISA routes of KVM's full irqchip");
    return absl::OkStatus();
  }
  if (config.split_irqchip)
    return absl::InvalidArgumentError(
        "the split irqchip is for the q35 machine (--machine q35); the pc machine has KVM's "
        "full irqchip");
  if (config.intel_iommu)
    return absl::InvalidArgumentError(
        "an Intel IOMMU is for the q35 machine (--machine q35); the pc machine has no PCI");
  if (config.edu)
    return absl::InvalidArgumentError(
        "the edu device is for the q35 machine (--machine q35); the pc machine has no PCI");
  return absl::OkStatus();
}

}  // namespace minivmm
