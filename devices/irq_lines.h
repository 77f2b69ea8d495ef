// The seam between a device that drives interrupt lines and the machine's
// interrupt controller: the device says "line n is now high/low"; the machine
// decides what that means (on the PC machine, KVM_IRQ_LINE into KVM's
// in-kernel PIC and IOAPIC). A device never sees KVM (docs/design.md), so it
// gets an IrqLines* instead. Internal to minivmm's machines for now; it moves
// to include/minivmm/ the day an embedder's device needs to raise a line.
#ifndef MINIVMM_DEVICES_IRQ_LINES_H_
#define MINIVMM_DEVICES_IRQ_LINES_H_

#include <cstdint>

namespace minivmm {

class IrqLines {
 public:
  virtual ~IrqLines() = default;

  // Drives line `irq` (an ISA IRQ, 0-15) to `high`. The machine maps it onto
  // its controllers; QEMU's PC machine with KVM's irqchip passes ISA IRQ n as
  // GSI n to KVM_IRQ_LINE and routes GSI n to PIC input n and IOAPIC pin n,
  // except GSI 0 to IOAPIC pin 2 and GSI 2 to neither (hw/i386/kvm/ioapic.c,
  // kvm_pc_setup_irq_routing; KVM's default routing keeps GSI 0 on pin 0).
  // Every call is a new level, repeats included: a device does not filter
  // them (QEMU's qemu_set_irq does not either, and an IOAPIC test raises a
  // level-triggered line twice on purpose). A line the machine does not have
  // is the caller's bug, not guest input: a device checks the number first.
  // Called from the exiting vCPU's thread, under the run loop's lock when
  // there is more than one vCPU.
  virtual void SetLevel(uint32_t irq, bool high) = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_IRQ_LINES_H_
