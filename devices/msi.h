// The seam between a device that sends message-signalled interrupts and
// whatever carries them (docs/machines.md, "q35"), as devices/irq_lines.h is
// for interrupt lines: the device says "write this MSI"; the machine decides
// what that means. On the q35 machine with an Intel IOMMU the IOMMU takes
// every MSI first (interrupt remapping, devices/intel_iommu.h) and hands the
// result on; without one, or after it, KVM_SIGNAL_MSI delivers it to KVM's
// in-kernel local APICs. The userspace IOAPIC (devices/ioapic.h) sends its
// interrupts through the same seam, as QEMU's IOAPIC does with KVM's split
// irqchip.
#ifndef MINIVMM_DEVICES_MSI_H_
#define MINIVMM_DEVICES_MSI_H_

#include <cstdint>
#include <optional>

namespace minivmm {

// An MSI as a PCI device writes it: `data` (32 bits) at `address` (the
// 0xFEExxxxx interrupt range on x86; bits 63-32 are the address's upper half,
// which only an x2APIC-format remapped interrupt may use).
struct MsiMessage {
  uint64_t address = 0;
  uint32_t data = 0;
  bool operator==(const MsiMessage&) const = default;
};

// A PCI requester ID (bus << 8 | device << 3 | function), the source ID an
// IOMMU checks. The IOAPIC's messages carry none (std::nullopt), as in QEMU,
// whose IOAPIC sends them with unspecified memory attributes.
using SourceId = std::optional<uint16_t>;

class MsiSink {
 public:
  virtual ~MsiSink() = default;

  // Sends `msi` from `source`. The message is guest-programmed and
  // untrusted: a sink refuses (and counts) what it cannot deliver, never
  // aborts. Called from the exiting vCPU's thread, under the run loop's lock
  // when there is more than one vCPU.
  virtual void SendMsi(const MsiMessage& msi, SourceId source) = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_MSI_H_
