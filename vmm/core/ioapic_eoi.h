// What the run loop hands a machine whose IOAPIC is the VMM's (the q35
// machine, KVM's split irqchip): KVM_EXIT_IOAPIC_EOI, a local APIC's EOI of a
// vector that a level-triggered IOAPIC entry sent (KVM knows which from the
// GSI routes the machine keeps, one MSI route per IOAPIC pin). Called on the
// exiting vCPU's thread, under the run loop's lock when there is more than
// one vCPU.
#ifndef MINIVMM_VMM_CORE_IOAPIC_EOI_H_
#define MINIVMM_VMM_CORE_IOAPIC_EOI_H_

#include <cstdint>

namespace minivmm {

class IoapicEoiSink {
 public:
  virtual ~IoapicEoiSink() = default;
  virtual void IoapicEoi(uint8_t vector) = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_CORE_IOAPIC_EOI_H_
