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
    if (config.pit)
      return absl::InvalidArgumentError(
          "a PIT is not on the q35 machine: KVM's PIT needs KVM's own IOAPIC and PICs, and q35's "
          "IOAPIC is minivmm's (KVM's split irqchip)");
    if (config.hyperv_testdev)
      return absl::InvalidArgumentError(
          "hyperv-testdev is for the pc machine: its SINT routes share KVM's GSI table with the "
          "pc machine's ISA routes, which q35 does not have");
    return absl::OkStatus();
  }
  if (config.intel_iommu)
    return absl::InvalidArgumentError(
        "an Intel IOMMU is for the q35 machine (--machine q35); the pc machine has no PCI");
  if (config.edu)
    return absl::InvalidArgumentError(
        "the edu device is for the q35 machine (--machine q35); the pc machine has no PCI");
  return absl::OkStatus();
}

}  // namespace minivmm
