// QEMU's `pc-testdev` (hw/misc/pc-testdev.c), the test device that
// kvm-unit-tests' x86 tests (emulator, eventinj, ioapic, realmode, ...) reach
// for data ports, a page flush, ISA interrupt lines and an MMIO scratch area.
// QEMU puts its five regions at fixed addresses; here they are three devices,
// so that the exit tables say which one the guest used:
//
//   PcTestdevPorts  "pc-testdev"        ports 0xe0-0xeb  (QEMU's ioport,
//                                        flush-page and ioport-byte regions)
//   PcTestdevIrq    "pc-testdev-irq"    ports 0x2000-0x2017 (irq-line)
//   PcTestdevIomem  "pc-testdev-iomem"  MMIO 0xff000000-0xff00ffff (iomem)
//
// QEMU's three regions at 0xe0 are adjacent, and QEMU splits an access that
// crosses them (memory_access_size() and flatview_*_continue() in physmem.c);
// one device over the twelve ports does the same split, which a bus that
// refuses straddling accesses (vmm/bus/bus.h) could not do for three devices.
// QEMU cuts every access to these regions into naturally aligned pieces of at
// most each region's valid maximum (4 bytes when it sets none), and the
// pieces below act byte by byte, so each device here is specified per byte.
//
// Semantics, matching QEMU's hw/misc/pc-testdev.c, per port or byte:
//  - 0xe0-0xe3 (ioport): one 32-bit little-endian data register; each byte of
//    a read or write at any size and offset reads or writes that byte of it
//    (test_ioport_read/write mask the bytes the access covers). 0 at reset.
//  - 0xe8-0xeb (ioport-byte): the same register again (QEMU's region at 0xe8
//    shares ioport_data and uses `addr & 3`); QEMU splits its accesses into
//    single bytes (impl.max_access_size = 1), which changes nothing here.
//  - 0xe4-0xe7 (flush-page): a write covering all four ports (an `outl` to
//    0xe4) asks QEMU to mprotect the host mapping of guest page
//    `value & ~0xfff` to PROT_NONE and back (test_flush_page_write); any
//    other write there is refused by QEMU (valid sizes 4 to 4) and ignored
//    here; reads there return 0. The request goes to HostPages::FlushHostPage
//    (devices/host_pages.h), which the machine implements: QEMU's mprotect
//    does not touch the guest's TLB or memory, it invalidates the host's page
//    tables, whose MMU notifier makes KVM drop its own (EPT/NPT or shadow)
//    mapping of the page, so that eventinj's next exception delivery through
//    that IDT or stack page takes a nested page fault inside KVM, which is
//    what those tests exercise. The guest sees the same memory either way,
//    and no exit to the VMM is added or removed.
//  - 0x2000 + n, n = 0-23 (irq-line): a byte written to port 0x2000 + n
//    sets ISA IRQ n to level (byte != 0), on every write, repeats included (test_irq_line_write:
//    qemu_set_irq(isa_get_irq(isa, addr),
//    !!data); QEMU's valid sizes are 1 to 1, so a wider `out` reaches it as
//    one 1-byte write per byte). Lines 0-15 go to IrqLines::SetLevel. Lines
//    16-23 are ISA IRQs QEMU does not have: isa_get_irq() asserts
//    isairq < ISA_NUM_IRQS (16), so a guest write there aborts QEMU. Here it
//    is guest input: ignored and counted, no line moves. Reads return 0
//    (test_irq_line_read).
//  - 0xff000000-0xff00ffff (iomem): 64 KiB of byte-addressed memory that is
//    not RAM, so every access exits: each byte read returns the last byte
//    written there, 0 before any write (QEMU zeroes the device at creation and
//    has no reset handler; neither is there one here). Any size, any offset.
// A byte past a device's end (which the bus never passes) reads 0 and is not
// written. Not thread-safe: one vCPU at a time (the run loop's lock).
#ifndef MINIVMM_DEVICES_PC_TESTDEV_H_
#define MINIVMM_DEVICES_PC_TESTDEV_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "devices/host_pages.h"
#include "devices/irq_lines.h"
#include "minivmm/io_device.h"

namespace minivmm {

// Ports 0xe0-0xeb: the data register, the flush-page port and the
// register's byte-wise alias.
class PcTestdevPorts final : public IoDevice {
 public:
  static constexpr uint64_t kPortBase = 0xe0;  // register on the port bus here
  static constexpr uint64_t kIoSize = 12;      // ... with this length
  static constexpr uint64_t kDataOffset = 0;   // the 4-byte data register
  static constexpr uint64_t kFlushOffset = 4;  // the 4-byte flush-page port
  static constexpr uint64_t kDataAliasOffset = 8;

  // `pages` is not owned and must outlive the device.
  explicit PcTestdevPorts(HostPages* pages) : pages_(pages) {}

  std::string_view Name() const override { return "pc-testdev"; }

  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

  uint32_t data_register() const { return data_; }
  // Flush-page requests taken (4-byte writes at kFlushOffset), and the guest
  // physical address the last one named (its page: `& ~0xfff`).
  uint64_t flush_requests() const { return flush_requests_; }
  uint32_t last_flush_address() const { return last_flush_address_; }
  // Writes that touched the flush-page port without being a flush request.
  uint64_t ignored_writes() const { return ignored_writes_; }

 private:
  HostPages* pages_;
  uint32_t data_ = 0;
  uint64_t flush_requests_ = 0;
  uint32_t last_flush_address_ = 0;
  uint64_t ignored_writes_ = 0;
};

// Ports 0x2000-0x2017: one port per ISA interrupt line.
class PcTestdevIrq final : public IoDevice {
 public:
  static constexpr uint64_t kPortBase = 0x2000;  // register on the port bus here
  static constexpr uint64_t kIoSize = 24;        // ... with this length
  static constexpr uint32_t kIsaIrqs = 16;       // lines 0-15 exist (ISA_NUM_IRQS)

  // `lines` is not owned and must outlive the device.
  explicit PcTestdevIrq(IrqLines* lines) : lines_(lines) {}

  std::string_view Name() const override { return "pc-testdev-irq"; }

  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

  // Bytes written to the ports of lines 16-23 (one per byte, not per access).
  uint64_t ignored_writes() const { return ignored_writes_; }

 private:
  IrqLines* lines_;
  uint64_t ignored_writes_ = 0;
};

// MMIO 0xff000000-0xff00ffff: 64 KiB of scratch memory behind exits.
class PcTestdevIomem final : public IoDevice {
 public:
  static constexpr uint64_t kMmioBase = 0xff000000;  // register on the MMIO bus here
  static constexpr uint64_t kIoSize = 0x10000;       // ... with this length

  PcTestdevIomem() : bytes_(kIoSize, 0) {}

  std::string_view Name() const override { return "pc-testdev-iomem"; }

  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

  std::span<const uint8_t> bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;  // kIoSize bytes
};

// The whole device, as the PC machine builds it when VmConfig::pc_testdev
// asks: register `ports` and `irq` on the port bus and `iomem` on the MMIO
// bus, each at its kPortBase/kMmioBase with its kIoSize.
struct PcTestdev {
  PcTestdev(IrqLines* lines, HostPages* pages) : ports(pages), irq(lines) {}

  PcTestdevPorts ports;
  PcTestdevIrq irq;
  PcTestdevIomem iomem;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_PC_TESTDEV_H_
