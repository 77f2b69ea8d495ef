// PCI bus 0 of the q35 machine (docs/machines.md, "q35"): functions with a
// 256-byte conventional configuration space, reached through configuration
// mechanism #1 at ports 0xcf8-0xcff (PciHost), as QEMU's hw/pci/pci.c,
// pci_host.c and msi.c do it. There is no firmware: the machine does what
// SeaBIOS would before the guest runs (assigns each BAR an address, writes
// the interrupt line, sets the command register's memory space bit) through
// AssignBar and the same ConfigWrite the guest uses.
//
// Configuration space of every function (little-endian; everything not
// listed reads as the constructor set it and is read-only):
//  - 0x00 vendor, 0x02 device, 0x08 revision, 0x09-0x0b class code, 0x0e
//    header type 0 (single function), 0x2c/0x2e subsystem vendor/id, 0x3d
//    interrupt pin, 0x3c interrupt line (read-write, 0 at reset).
//  - 0x04 command: bits 1 (memory space), 2 (bus master) and 10 (INTx
//    disable) are writable; bit 0 (I/O space) reads 0, as there are no I/O
//    BARs. QEMU also lets the guest set bit 0, bit 8 (SERR#) and the cache
//    line size (0x0c), which change nothing on a virtual bus; here they are
//    read-only 0.
//  - 0x06 status: bit 3 is the INTx level the function asserts (before the
//    disable bit, as QEMU's pci_update_irq_status), bit 4 is set when the
//    function has a capability list. No error bits are ever set (QEMU's
//    write-one-to-clear bits therefore read 0 here too).
//  - 0x10-0x24 BARs: a declared BAR is a 32-bit non-prefetchable memory BAR
//    of a power-of-two size >= 4 KiB; undeclared BARs read 0.
//  - 0x34 capability pointer and 0x40-0x4d the MSI capability, when the
//    function has one (AddMsiCapability): 64-bit address, one vector, no
//    per-vector masking, as QEMU's msi_init(dev, 0, 1, true, false). Only
//    the enable bit of its control word is writable (Multiple Message Enable
//    reads 0: QEMU clamps it to the one vector), the address (bits 1:0 of the
//    low half read 0) and the 16-bit data. QEMU leaves the rest of
//    0x40-0xff writable as scratch; here it is read-only 0.
//
// BARs are fixed. minivmm's buses are static (vmm/bus/bus.h): a device is
// registered once, at one range, before the run, so a BAR cannot move. A
// guest that sizes a BAR (writes all ones to its address bits) reads back
// ~(size - 1) | flags, exactly as on hardware, and may write the assigned
// address back; a write of any other address is refused: the BAR keeps (and
// reads) its assigned address, moved_bars() counts it and
// last_refused_move() remembers it for the machine's notes. While the BAR
// reads the sizing value its MMIO stays at the assigned address.
//
// Not thread-safe: one vCPU at a time (the run loop's lock).
#ifndef MINIVMM_DEVICES_PCI_H_
#define MINIVMM_DEVICES_PCI_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "devices/irq_lines.h"
#include "devices/msi.h"
#include "minivmm/io_device.h"

namespace minivmm {

inline constexpr size_t kPciConfigSize = 256;
inline constexpr int kPciBars = 6;
inline constexpr uint8_t kPciMsiCapOffset = 0x40;  // where QEMU's pci_find_space puts it
// QEMU's subsystem IDs for a device that sets none (pci_set_default_subsystem_id).
inline constexpr uint16_t kPciDefaultSubsystemVendor = 0x1af4;
inline constexpr uint16_t kPciDefaultSubsystemId = 0x1100;

// Configuration-space offsets and bits the devices and tests name.
enum PciConfigReg : uint8_t {
  kPciVendorId = 0x00,
  kPciDeviceId = 0x02,
  kPciCommand = 0x04,
  kPciStatus = 0x06,
  kPciRevision = 0x08,
  kPciClassProg = 0x09,  // class code: prog-if, then sub-class, then base class
  kPciHeaderType = 0x0e,
  kPciBar0 = 0x10,
  kPciSubsystemVendorId = 0x2c,
  kPciSubsystemId = 0x2e,
  kPciCapabilityList = 0x34,
  kPciInterruptLine = 0x3c,
  kPciInterruptPin = 0x3d,
};
inline constexpr uint16_t kPciCommandIo = 1 << 0;
inline constexpr uint16_t kPciCommandMemory = 1 << 1;
inline constexpr uint16_t kPciCommandMaster = 1 << 2;
inline constexpr uint16_t kPciCommandIntxDisable = 1 << 10;
inline constexpr uint16_t kPciStatusInterrupt = 1 << 3;
inline constexpr uint16_t kPciStatusCapList = 1 << 4;
// MSI capability registers, relative to the capability (64-bit layout).
inline constexpr uint8_t kPciMsiControl = 0x02;
inline constexpr uint8_t kPciMsiAddressLo = 0x04;
inline constexpr uint8_t kPciMsiAddressHi = 0x08;
inline constexpr uint8_t kPciMsiData = 0x0c;
inline constexpr uint8_t kPciMsiSize = 0x0e;
inline constexpr uint16_t kPciMsiEnable = 1 << 0;
inline constexpr uint16_t kPciMsi64Bit = 1 << 7;

// What a function is, fixed by its class.
struct PciIdentity {
  std::string_view name;  // its BAR windows' name in the exit tables ("edu"); static storage
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  uint8_t revision = 0;
  uint32_t class_code = 0;  // base class << 16 | sub-class << 8 | prog-if
  uint16_t subsystem_vendor_id = kPciDefaultSubsystemVendor;
  uint16_t subsystem_id = kPciDefaultSubsystemId;
  uint8_t interrupt_pin = 0;  // 0: none; 1: INTA
};

// Where the machine connects a function's interrupts. Not owned; each must
// outlive the function. A null IrqLines leaves INTx unconnected (the status
// bit still follows it); a null MsiSink drops MSIs (counted, dropped_msis()).
struct PciInterruptWiring {
  IrqLines* intx = nullptr;
  uint32_t intx_line = 0;  // the IrqLines line the function's pin drives
  MsiSink* msi = nullptr;
};

// A guest write that tried to move a BAR, refused (see above).
struct PciRefusedBarMove {
  int bar = 0;
  uint32_t address = 0;  // the address bits the guest wrote
  bool operator==(const PciRefusedBarMove&) const = default;
};

// A function on bus 0: owns its configuration space and its BARs' windows.
// Not copyable or movable (its windows point back at it).
class PciFunction {
 public:
  virtual ~PciFunction();
  PciFunction(const PciFunction&) = delete;
  PciFunction& operator=(const PciFunction&) = delete;

  std::string_view name() const { return identity_.name; }

  // A configuration read or write of `size` (1, 2 or 4) bytes at `reg`, as
  // PciHost makes it: the caller clips so that reg + size <= kPciConfigSize
  // (anything outside is a VMM bug: it reads 0 and writes nothing). Write
  // masks apply (see above), to the machine's writes as to the guest's.
  uint32_t ConfigRead(uint32_t reg, size_t size) const;
  void ConfigWrite(uint32_t reg, uint32_t value, size_t size);

  // Fixes BAR `index` at `address` (before the run). InvalidArgument for an
  // undeclared BAR or an address not aligned to the BAR's size or whose
  // range passes 4 GiB. Then register bar_window(index) on the MMIO bus at
  // [address, address + bar_size(index)).
  absl::Status AssignBar(int index, uint32_t address);
  bool has_bar(int index) const;
  uint32_t bar_address(int index) const;  // 0 before AssignBar or for no BAR
  uint32_t bar_size(int index) const;     // 0 for no BAR
  // The BAR's MMIO as the bus sees it, named name(): it forwards to the
  // function's BAR device while the command register's memory space bit is
  // set; otherwise reads return all ones and writes are dropped, both
  // counted in undecoded_accesses(). Null for no BAR. Owned by the function.
  IoDevice* bar_window(int index);

  // Bus 0: the requester ID is the devfn PciHost::Add gave (0 before).
  uint8_t devfn() const { return devfn_; }
  uint16_t requester_id() const { return devfn_; }

  bool memory_enabled() const { return command() & kPciCommandMemory; }
  bool bus_master() const { return command() & kPciCommandMaster; }
  bool intx_disabled() const { return command() & kPciCommandIntxDisable; }
  bool msi_enabled() const;
  // The programmed message: address hi:lo, data = the 16-bit data register.
  MsiMessage msi_message() const;
  bool intx_asserted() const { return intx_asserted_; }  // status bit 3
  bool intx_output() const { return intx_output_; }      // what IrqLines was last told

  uint64_t moved_bars() const { return moved_bars_; }
  std::optional<PciRefusedBarMove> last_refused_move() const { return last_refused_move_; }
  uint64_t undecoded_accesses() const { return undecoded_accesses_; }
  uint64_t dropped_msis() const { return dropped_msis_; }

 protected:
  PciFunction(const PciIdentity& identity, const PciInterruptWiring& wiring);

  // For a subclass's constructor. Declares memory BAR `index` (0-5) of
  // `size` bytes served by `device` (not owned; typically a member). A bad
  // index, size or second declaration is a bug in the subclass: aborts.
  void DeclareMemoryBar(int index, uint32_t size, IoDevice* device);
  // Adds the MSI capability at kPciMsiCapOffset (at most once; aborts else).
  void AddMsiCapability();

  // Asserts (true) or deasserts INTx. The line IrqLines sees is
  // level && !intx_disabled(); only its changes are passed on, as QEMU's
  // pci_irq_handler filters them (unlike an ISA device's repeats,
  // devices/irq_lines.h). A function without an interrupt pin ignores it.
  void SetIntx(bool level);
  // Sends msi_message() from requester_id(). The caller checks
  // msi_enabled(); the message is dropped and counted (dropped_msis()) when
  // bus mastering is off (QEMU writes MSIs through the bus-master address
  // space, which is then disabled), MSI is not enabled, or no sink is wired.
  void SendMsi();

 private:
  friend class PciHost;
  class BarWindow;
  struct Bar {
    uint32_t size = 0;  // 0: no BAR
    uint32_t address = 0;
    IoDevice* device = nullptr;
    std::unique_ptr<BarWindow> window;
  };

  uint16_t command() const;
  uint32_t Get(uint32_t reg, size_t size) const;
  void Set(uint32_t reg, uint32_t value, size_t size);
  void SetWritable(uint32_t reg, uint32_t mask, size_t size);
  void CheckBar(int index);
  void UpdateIntxOutput();

  PciIdentity identity_;
  PciInterruptWiring wiring_;
  std::array<uint8_t, kPciConfigSize> config_{};
  std::array<uint8_t, kPciConfigSize> wmask_{};  // 1: the guest may change this bit
  std::array<Bar, kPciBars> bars_;
  bool has_msi_ = false;
  uint8_t devfn_ = 0;
  bool attached_ = false;
  bool intx_asserted_ = false;
  bool intx_output_ = false;
  uint64_t moved_bars_ = 0;
  std::optional<PciRefusedBarMove> last_refused_move_;
  uint64_t undecoded_accesses_ = 0;
  uint64_t dropped_msis_ = 0;
};

// Configuration mechanism #1 for bus 0, ports 0xcf8-0xcff, as QEMU's
// pci_host.c (q35 registers the same handlers):
//  - CONFIG_ADDRESS, ports 0xcf8-0xcfb: a 4-byte write at 0xcf8 latches it
//    (all 32 bits, as QEMU keeps them); any other write there is ignored and
//    counted. A read of any size at any of the four ports returns the
//    latched value's low bytes (QEMU's handler ignores the offset). QEMU's
//    q35 overlays a 1-byte reset control register (ICH9 RCR) at 0xcf9,
//    which is not emulated here.
//  - CONFIG_DATA, ports 0xcfc-0xcff: with bit 31 of CONFIG_ADDRESS clear,
//    reads return all ones and writes are ignored (counted). Otherwise bus =
//    bits 23:16 (only bus 0 has functions), devfn = bits 15:8 and register =
//    (bits 7:0 | port offset & 3), as QEMU's `config_reg | (addr & 3)`: the
//    low two bits of the latched address are honoured, which kvm-unit-tests
//    relies on (it latches the register's own low bits and reads bytes and
//    words at 0xcfc). An access running past register 0xff is clipped: its
//    bytes past the end read 0 and are not written. No function there: reads
//    all ones, writes ignored (counted).
// An access is cut as QEMU's memory core cuts it: naturally aligned pieces
// of at most 4 bytes, none crossing 0xcfc (so an `outl` at 0xcfa writes
// nothing to CONFIG_ADDRESS and 2 bytes to CONFIG_DATA).
class PciHost final : public IoDevice {
 public:
  static constexpr uint64_t kPortBase = 0xcf8;  // register on the port bus here
  static constexpr uint64_t kIoSize = 8;        // ... with this length
  static constexpr uint32_t kEnable = 1u << 31;

  std::string_view Name() const override { return "pci-config"; }

  // Puts `function` (not owned; must outlive this) at `devfn` of bus 0.
  // InvalidArgument for null; AlreadyExists when devfn is taken or the
  // function is already on a bus. A refused call changes nothing.
  absl::Status Add(uint8_t devfn, PciFunction* function);
  PciFunction* function(uint8_t devfn) const { return functions_[devfn]; }

  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

  uint32_t config_address() const { return config_address_; }
  // Writes that changed nothing: CONFIG_ADDRESS writes not 4 bytes at 0xcf8,
  // CONFIG_DATA writes while disabled or to no function (one per piece).
  uint64_t ignored_writes() const { return ignored_writes_; }

 private:
  uint32_t ReadPiece(uint64_t offset, size_t size) const;
  void WritePiece(uint64_t offset, size_t size, uint32_t value);
  PciFunction* Target() const;

  std::array<PciFunction*, 256> functions_{};
  uint32_t config_address_ = 0;
  uint64_t ignored_writes_ = 0;
};

// QEMU's q35 memory controller hub (MCH, hw/pci-host/q35.c) at 00:00.0, as
// far as a guest without firmware needs it: its identity. No BARs, no
// interrupt pin, no capabilities. Its chipset registers (PCIEXBAR, PAM,
// SMRAM, ESMRAMC, ...) are not emulated: they read 0 and are read-only.
class Q35HostBridge final : public PciFunction {
 public:
  static constexpr uint8_t kDevfn = 0;
  Q35HostBridge();
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_PCI_H_
