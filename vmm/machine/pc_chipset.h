// The PC machine's chipset (docs/machines.md): what tells QEMU's `pc` and
// `q35` apart for a guest of minivmm's PC machine, behind one seam, so that
// the PC builder (pc_machine.cc) has one boot protocol and one set of legacy
// devices for both, and nothing in it tests which chipset it has:
//
//   i440fx (machine "pc")   KVM's full in-kernel irqchip (kvm_irqchip.h):
//                           local APICs, the IOAPIC and both PICs, ISA IRQs
//                           routed as QEMU's pc routes them, KVM's PIT when
//                           asked.
//   q35 (machine "q35")     PCI bus 0 with the Q35 host bridge, optionally
//                           QEMU's edu device; KVM's full irqchip as pc's,
//                           or with split_irqchip KVM's split irqchip (local
//                           APICs in the kernel, the IOAPIC minivmm's own,
//                           devices/ioapic.h, no PIC or PIT) and optionally
//                           an Intel IOMMU.
//
// A chipset is also the machine's IrqLines: ISA IRQ n driven by a legacy
// device (pc-testdev) reaches the chipset's interrupt controllers.
#ifndef MINIVMM_VMM_MACHINE_PC_CHIPSET_H_
#define MINIVMM_VMM_MACHINE_PC_CHIPSET_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "devices/irq_lines.h"
#include "minivmm/vm_config.h"
#include "vmm/boot/acpi_tables.h"
#include "vmm/core/ioapic_eoi.h"
#include "vmm/vm_state.h"

namespace minivmm {

class PcChipset : public IrqLines {
 public:
  ~PcChipset() override = default;

  // Before any vCPU exists: the interrupt controllers (KVM gives each vCPU
  // created after them a local APIC), and the chipset's devices on the VM's
  // buses. A KVM that lacks what the chipset needs: FailedPrecondition,
  // "the <machine> machine cannot run here: ...".
  virtual absl::Status Build(Vm::State& s) = 0;
  // What a PC BIOS leaves in the chipset's legacy controllers, at boot and
  // again on the resume path from S3: the PICs programmed (bios_state.h),
  // where the chipset has PICs; nothing otherwise.
  virtual absl::Status SetBiosState(bool at_boot) = 0;
  // The chipset's part of the ACPI tables (the DMAR of an IOMMU).
  virtual void DescribeIn(AcpiMachine& acpi) const = 0;
  // The chipset's own IOAPIC's EOIs (Machine::ioapic_eoi); null: KVM's.
  virtual IoapicEoiSink* ioapic_eoi() { return nullptr; }
  // What its devices noted during the run.
  virtual std::vector<std::string> notes() const { return {}; }
};

// The chipset `config.machine` names (kPc or kQ35).
std::unique_ptr<PcChipset> MakePcChipset(const VmConfig& config);
// The fields of `config` a chipset refuses (InvalidArgument naming them):
// the i440fx one, q35's devices and the split irqchip; q35, an Intel IOMMU
// without the split irqchip, and a PIT and hyperv-testdev with it.
absl::Status CheckPcChipsetConfig(const VmConfig& config);

}  // namespace minivmm

#endif  // MINIVMM_VMM_MACHINE_PC_CHIPSET_H_
