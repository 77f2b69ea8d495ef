// QEMU's educational PCI device `edu` (hw/misc/edu.c, docs/specs/edu.rst),
// which kvm-unit-tests' x86/intel-iommu.c drives (lib/pci-edu.c) for DMA
// through the IOMMU and for remapped INTx and MSI interrupts.
//
// PCI identity as QEMU's: vendor 0x1234, device 0x11e8, revision 0x10, class
// code 0x00ff00 (QEMU's class_id PCI_CLASS_OTHERS, 0xff, is the 16-bit
// base/sub-class word, so sub-class 0xff of base class 0), subsystem
// 0x1af4/0x1100, interrupt pin INTA, the MSI capability (devices/pci.h), and
// BAR 0: 1 MiB of MMIO, the registers below.
//
// Accesses are cut as QEMU's memory core cuts them: naturally aligned pieces
// of at most 8 bytes. A piece of 1 or 2 bytes is refused by QEMU's memory
// core (edu allows 4 to 8): it reads 0 and writes nothing. A 4- or 8-byte
// piece reaches the registers as in QEMU's edu_mmio_read/write: below 0x80
// only 4 bytes (an 8-byte piece reads all ones and writes nothing), from
// 0x80 on 4 or 8; a read of no register reads all ones, a write to none is
// ignored. Refused pieces and writes to no register count in
// ignored_accesses(). Registers, 32-bit unless said (little-endian):
//  0x00 RO  identification 0x010000ed.
//  0x04 RW  liveness check: reads the bitwise NOT of the last value written
//           (0 before any write).
//  0x08 RW  factorial: a write of n stores n! (32-bit, wrapping as QEMU's
//           uint32_t loop), unless the status says computing (never here).
//           QEMU computes in a thread and the guest polls status bit 0; here
//           the product is computed in the write, so bit 0 already reads 0.
//           Once the product is 0 (n >= 34) it stays 0, so no write takes
//           more than 34 steps. Then, if status bit 7 is set, raises
//           interrupt 0x1.
//  0x20 RW  status: bit 0 computing (RO, always 0 here), bit 7 raise an
//           interrupt when a factorial is done; other bits read 0.
//  0x24 RO  interrupt status.
//  0x60 WO  interrupt raise: ORs the value into the interrupt status; if the
//           status is then nonzero, sends the MSI when MSI is enabled, else
//           asserts INTx (reads all ones, as QEMU).
//  0x64 WO  interrupt acknowledge: clears the value's bits; when the status
//           is then 0 and MSI is off, deasserts INTx.
//  0x80 RW  DMA source, 0x88 DMA destination, 0x90 DMA count (64-bit; a
//           4-byte write stores the value zero-extended, a 4-byte read
//           returns the low half; at +4 there is no register).
//  0x98 RW  DMA command: a write without bit 0 (start) is ignored; with it
//           the command is stored and run: bit 1 direction (0: RAM to the
//           device's buffer, 1: buffer to RAM), bit 2 raise interrupt 0x100
//           when done. QEMU runs it from a 100 ms timer and the guest polls
//           bit 0; here it runs in the write, so bit 0 already reads 0.
// DMA: the device's buffer is 4096 bytes at device address 0x40000. The
// buffer-side address (destination from RAM, source to RAM) and count must
// lie inside it: otherwise QEMU copies out of bounds (older versions abort);
// here the DMA is refused (refused_dmas()) and nothing is copied. The RAM
// side address is masked to 28 bits (QEMU's edu_clamp_addr, dma_mask). The
// RAM side goes through the DmaSpace with requester_id() as source ID. With
// bus mastering off nothing is copied (dmas_without_master()). A DmaSpace
// failure (IOMMU fault, not RAM) is counted (dma_errors()) and nothing is
// copied (QEMU would copy what translates and read zeros for the rest). In
// every case the command completes: bit 0 clears and bit 2 raises 0x100, as
// QEMU ignores pci_dma_rw's result.
//
// Not thread-safe: one vCPU at a time (the run loop's lock).
#ifndef MINIVMM_DEVICES_EDU_H_
#define MINIVMM_DEVICES_EDU_H_

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "devices/dma.h"
#include "devices/pci.h"
#include "minivmm/io_device.h"

namespace minivmm {

class Edu final : public PciFunction {
 public:
  static constexpr uint32_t kBar0Size = 1 << 20;
  static constexpr uint64_t kDmaBufferAddress = 0x40000;
  static constexpr uint64_t kDmaBufferSize = 4096;
  static constexpr uint64_t kDmaMask = (uint64_t{1} << 28) - 1;

  enum Reg : uint64_t {
    kId = 0x00,
    kLiveness = 0x04,
    kFactorial = 0x08,
    kStatus = 0x20,
    kIrqStatus = 0x24,
    kIrqRaise = 0x60,
    kIrqAck = 0x64,
    kDmaSource = 0x80,
    kDmaDestination = 0x88,
    kDmaCount = 0x90,
    kDmaCommand = 0x98,
  };
  static constexpr uint32_t kStatusComputing = 0x01;
  static constexpr uint32_t kStatusIrqFactorial = 0x80;
  static constexpr uint32_t kIrqFactorial = 0x001;
  static constexpr uint32_t kIrqDma = 0x100;
  static constexpr uint64_t kDmaStart = 0x1;
  static constexpr uint64_t kDmaToRam = 0x2;
  static constexpr uint64_t kDmaIrq = 0x4;

  // `dma` (not owned, must outlive the device) is memory as this device
  // sees it; `wiring` connects INTA and MSI (devices/pci.h). Assign BAR 0
  // and add the device to the PciHost before the run.
  Edu(const PciInterruptWiring& wiring, DmaSpace* dma);

  uint32_t irq_status() const { return irq_status_; }
  std::span<const uint8_t> dma_buffer() const { return dma_buffer_; }

  uint64_t refused_dmas() const { return refused_dmas_; }
  uint64_t dmas_without_master() const { return dmas_without_master_; }
  uint64_t dma_errors() const { return dma_errors_; }
  uint64_t ignored_accesses() const { return ignored_accesses_; }

 private:
  // BAR 0's registers, behind the PciFunction's window.
  class Registers final : public IoDevice {
   public:
    explicit Registers(Edu* edu) : edu_(edu) {}
    std::string_view Name() const override { return "edu-registers"; }
    void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
    void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

   private:
    Edu* edu_;
  };

  uint64_t ReadRegister(uint64_t offset, size_t size);
  void WriteRegister(uint64_t offset, size_t size, uint64_t value);
  void RaiseIrq(uint32_t bits);
  void LowerIrq(uint32_t bits);
  void RunDma();

  DmaSpace* dma_;
  Registers registers_{this};
  uint32_t liveness_ = 0;
  uint32_t factorial_ = 0;
  uint32_t status_ = 0;
  uint32_t irq_status_ = 0;
  uint64_t dma_source_ = 0;
  uint64_t dma_destination_ = 0;
  uint64_t dma_count_ = 0;
  uint64_t dma_command_ = 0;
  std::array<uint8_t, kDmaBufferSize> dma_buffer_{};
  uint64_t refused_dmas_ = 0;
  uint64_t dmas_without_master_ = 0;
  uint64_t dma_errors_ = 0;
  uint64_t ignored_accesses_ = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_EDU_H_
