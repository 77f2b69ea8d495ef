// KVM's full in-kernel irqchip as a PC chipset uses it (pc_chipset.h): the
// local APICs, the IOAPIC and both PICs (KVM_CREATE_IRQCHIP), ISA IRQs and
// GSIs routed as QEMU's PC machines route them (KvmVm::RouteIsaIrqsAsPc: GSI
// n to PIC input n and IOAPIC pin n, but GSI 0 to pin 2), KVM's PIT when
// asked, and the PICs (and PIT) as a BIOS leaves them. The `pc` machine's
// chipset, and the `q35` machine's without the split irqchip.
#ifndef MINIVMM_VMM_MACHINE_KVM_IRQCHIP_H_
#define MINIVMM_VMM_MACHINE_KVM_IRQCHIP_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "devices/irq_lines.h"
#include "vmm/kvm/kvm.h"

namespace minivmm {

class KvmIrqchip final : public IrqLines {
 public:
  // `machine` names the machine in the refusal where KVM lacks the irqchip.
  KvmIrqchip(std::string_view machine, bool pit) : machine_(machine), pit_(pit) {}

  // Before any vCPU: the irqchip, its routes, the PIT where asked.
  // FailedPrecondition "the <machine> machine cannot run here: ..." without
  // KVM_CAP_IRQCHIP, "no PIT here: ..." without KVM_CAP_PIT2.
  absl::Status Build(KvmVm& vm);
  // The PICs as a BIOS programs them; at boot, the PIT's channel 0 too.
  absl::Status SetBiosState(bool at_boot);
  // GSI `irq` to `high` with KVM_IRQ_LINE (for an ISA IRQ, its own GSI).
  void SetLevel(uint32_t irq, bool high) override;
  std::vector<std::string> notes() const;

 private:
  const std::string machine_;
  const bool pit_;
  KvmVm* vm_ = nullptr;
  uint64_t irq_line_failures_ = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_MACHINE_KVM_IRQCHIP_H_
