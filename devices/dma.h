// The seam between a device that reads and writes memory by DMA and the
// machine's memory as that device sees it (docs/machines.md, "q35"): without
// an IOMMU, guest-physical RAM itself (GuestMemoryDma below); with the Intel
// IOMMU's DMA remapping enabled, the IOMMU's translation of the device's
// addresses (IOVAs) for its source ID (devices/intel_iommu.h). A device never
// sees GuestMemory or KVM directly, only this.
#ifndef MINIVMM_DEVICES_DMA_H_
#define MINIVMM_DEVICES_DMA_H_

#include <cstdint>
#include <span>

#include "minivmm/guest_address.h"
#include "minivmm/guest_memory.h"

namespace minivmm {

class DmaSpace {
 public:
  virtual ~DmaSpace() = default;

  // Copies [address, address + out.size()) as device `source_id` sees it
  // into `out`. False, and `out` unspecified, when any byte of it does not
  // translate or is not RAM (the space records the fault its own way): a
  // device then reports a DMA error as it would, it never crashes.
  virtual bool Read(uint16_t source_id, uint64_t address, std::span<uint8_t> out) = 0;
  // Copies `in` to [address, address + in.size()) as `source_id` sees it.
  // False when any byte does not translate, is read-only to the device, or
  // is not RAM; then nothing at all is written.
  virtual bool Write(uint16_t source_id, uint64_t address, std::span<const uint8_t> in) = 0;
};

// DMA straight to guest-physical RAM, as on a machine without an IOMMU (or
// with its translation off): every source sees the same memory.
class GuestMemoryDma final : public DmaSpace {
 public:
  // `memory` is not owned and must outlive this.
  explicit GuestMemoryDma(const GuestMemory* memory) : memory_(memory) {}

  bool Read(uint16_t /*source_id*/, uint64_t address, std::span<uint8_t> out) override {
    return memory_->Read(GuestAddress(address), out);
  }
  bool Write(uint16_t /*source_id*/, uint64_t address, std::span<const uint8_t> in) override {
    return memory_->Write(GuestAddress(address), in);
  }

 private:
  const GuestMemory* memory_;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_DMA_H_
