#include "devices/pci.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_format.h"

namespace minivmm {
namespace {

// A bug in a PciFunction subclass (not guest input): fail loudly.
[[noreturn]] void SubclassBug(std::string_view name, const char* what) {
  std::fprintf(stderr, "PciFunction %.*s: %s\n", static_cast<int>(name.size()), name.data(), what);
  std::abort();
}

bool Overlaps(uint32_t reg, size_t size, uint32_t start, size_t length) {
  return reg < start + length && start < reg + size;
}

uint32_t LittleEndian(std::span<const uint8_t> bytes) {
  uint32_t value = 0;
  for (size_t i = 0; i < bytes.size() && i < 4; ++i) value |= uint32_t{bytes[i]} << (8 * i);
  return value;
}

// The size of the next piece of an access at port offset `at` with `left`
// bytes to go, as QEMU's memory_access_size cuts it: at most 4 bytes, no
// larger than the offset's alignment, not past the 4-byte register it
// starts in, a power of two.
size_t PieceSize(uint64_t at, size_t left) {
  size_t size = std::min<size_t>(left, 4 - (at & 3));
  if ((at & 3) != 0) size = std::min<size_t>(size, at & -at);
  return std::bit_floor(size);
}

}  // namespace

// The bus's view of one BAR (see PciFunction::bar_window).
class PciFunction::BarWindow final : public IoDevice {
 public:
  BarWindow(PciFunction* function, IoDevice* device) : function_(function), device_(device) {}

  std::string_view Name() const override { return function_->name(); }

  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override {
    if (function_->memory_enabled()) return device_->Read(offset, data, ctx);
    ++function_->undecoded_accesses_;
    std::fill(data.begin(), data.end(), uint8_t{0xff});
  }
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override {
    if (function_->memory_enabled()) return device_->Write(offset, data, ctx);
    ++function_->undecoded_accesses_;
  }

 private:
  PciFunction* function_;
  IoDevice* device_;
};

PciFunction::PciFunction(const PciIdentity& identity, const PciInterruptWiring& wiring)
    : identity_(identity), wiring_(wiring) {
  Set(kPciVendorId, identity.vendor_id, 2);
  Set(kPciDeviceId, identity.device_id, 2);
  Set(kPciRevision, identity.revision, 1);
  Set(kPciClassProg, identity.class_code, 3);
  Set(kPciSubsystemVendorId, identity.subsystem_vendor_id, 2);
  Set(kPciSubsystemId, identity.subsystem_id, 2);
  Set(kPciInterruptPin, identity.interrupt_pin, 1);
  SetWritable(kPciCommand, kPciCommandMemory | kPciCommandMaster | kPciCommandIntxDisable, 2);
  SetWritable(kPciInterruptLine, 0xff, 1);
}

PciFunction::~PciFunction() = default;

uint32_t PciFunction::Get(uint32_t reg, size_t size) const {
  if (reg >= kPciConfigSize || size > kPciConfigSize - reg) return 0;
  return LittleEndian(std::span(config_).subspan(reg, size));
}

void PciFunction::Set(uint32_t reg, uint32_t value, size_t size) {
  for (size_t i = 0; i < size; ++i) config_[reg + i] = static_cast<uint8_t>(value >> (8 * i));
}

void PciFunction::SetWritable(uint32_t reg, uint32_t mask, size_t size) {
  for (size_t i = 0; i < size; ++i) wmask_[reg + i] = static_cast<uint8_t>(mask >> (8 * i));
}

uint16_t PciFunction::command() const { return static_cast<uint16_t>(Get(kPciCommand, 2)); }

uint32_t PciFunction::ConfigRead(uint32_t reg, size_t size) const { return Get(reg, size); }

void PciFunction::ConfigWrite(uint32_t reg, uint32_t value, size_t size) {
  if (reg >= kPciConfigSize || size > kPciConfigSize - reg) return;
  for (size_t i = 0; i < size; ++i) {
    const uint8_t byte = static_cast<uint8_t>(value >> (8 * i));
    uint8_t& at = config_[reg + i];
    at = static_cast<uint8_t>((at & ~wmask_[reg + i]) | (byte & wmask_[reg + i]));
  }
  for (int bar = 0; bar < kPciBars; ++bar) {
    if (Overlaps(reg, size, kPciBar0 + 4 * bar, 4)) CheckBar(bar);
  }
  if (Overlaps(reg, size, kPciCommand, 2)) UpdateIntxOutput();
  // QEMU's msi_write_config: while MSI is enabled the function may not use
  // INTx, so a write to the capability with MSI on drops any asserted INTx.
  if (has_msi_ && Overlaps(reg, size, kPciMsiCapOffset, kPciMsiSize) && msi_enabled()) {
    SetIntx(false);
  }
}

void PciFunction::CheckBar(int index) {
  Bar& bar = bars_[index];
  if (bar.size == 0) return;
  const uint32_t reg = kPciBar0 + 4 * index;
  const uint32_t address_bits = ~(bar.size - 1);
  const uint32_t written = Get(reg, 4) & address_bits;
  if (written == address_bits || written == bar.address) return;  // sizing, or a restore
  ++moved_bars_;
  last_refused_move_ = PciRefusedBarMove{index, written};
  Set(reg, bar.address, 4);  // flags are 0: 32-bit, non-prefetchable memory
}

void PciFunction::DeclareMemoryBar(int index, uint32_t size, IoDevice* device) {
  if (index < 0 || index >= kPciBars) SubclassBug(name(), "BAR index out of range");
  if (size < 4096 || !std::has_single_bit(size)) SubclassBug(name(), "BAR size not 2^n >= 4K");
  if (device == nullptr || bars_[index].size != 0) SubclassBug(name(), "BAR redeclared or null");
  bars_[index] = Bar{size, 0, device, std::make_unique<BarWindow>(this, device)};
  SetWritable(kPciBar0 + 4 * index, ~(size - 1), 4);
}

absl::Status PciFunction::AssignBar(int index, uint32_t address) {
  if (!has_bar(index)) {
    return absl::InvalidArgumentError(absl::StrFormat("%s has no BAR %d", name(), index));
  }
  Bar& bar = bars_[index];
  if ((address & (bar.size - 1)) != 0 || uint64_t{address} + bar.size > (uint64_t{1} << 32)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s BAR %d: %#x is not a %#x-aligned 32-bit address", name(), index, address, bar.size));
  }
  bar.address = address;
  Set(kPciBar0 + 4 * index, address, 4);
  return absl::OkStatus();
}

bool PciFunction::has_bar(int index) const {
  return index >= 0 && index < kPciBars && bars_[index].size != 0;
}
uint32_t PciFunction::bar_address(int index) const {
  return has_bar(index) ? bars_[index].address : 0;
}
uint32_t PciFunction::bar_size(int index) const { return has_bar(index) ? bars_[index].size : 0; }
IoDevice* PciFunction::bar_window(int index) {
  return has_bar(index) ? bars_[index].window.get() : nullptr;
}

void PciFunction::AddMsiCapability() {
  if (has_msi_) SubclassBug(name(), "a second MSI capability");
  has_msi_ = true;
  Set(kPciCapabilityList, kPciMsiCapOffset, 1);
  Set(kPciStatus, Get(kPciStatus, 2) | kPciStatusCapList, 2);
  Set(kPciMsiCapOffset, 0x05, 1);  // PCI_CAP_ID_MSI; next pointer 0: the last one
  Set(kPciMsiCapOffset + kPciMsiControl, kPciMsi64Bit, 2);
  SetWritable(kPciMsiCapOffset + kPciMsiControl, kPciMsiEnable, 2);
  SetWritable(kPciMsiCapOffset + kPciMsiAddressLo, 0xfffffffc, 4);
  SetWritable(kPciMsiCapOffset + kPciMsiAddressHi, 0xffffffff, 4);
  SetWritable(kPciMsiCapOffset + kPciMsiData, 0xffff, 2);
}

bool PciFunction::msi_enabled() const {
  return has_msi_ && (Get(kPciMsiCapOffset + kPciMsiControl, 2) & kPciMsiEnable);
}

MsiMessage PciFunction::msi_message() const {
  if (!has_msi_) return {};
  return MsiMessage{
      .address = uint64_t{Get(kPciMsiCapOffset + kPciMsiAddressHi, 4)} << 32 |
                 Get(kPciMsiCapOffset + kPciMsiAddressLo, 4),
      .data = Get(kPciMsiCapOffset + kPciMsiData, 2),
  };
}

void PciFunction::SetIntx(bool level) {
  if (identity_.interrupt_pin == 0) return;
  intx_asserted_ = level;
  const uint32_t status = Get(kPciStatus, 2) & ~uint32_t{kPciStatusInterrupt};
  Set(kPciStatus, status | (level ? kPciStatusInterrupt : 0), 2);
  UpdateIntxOutput();
}

void PciFunction::UpdateIntxOutput() {
  const bool output = intx_asserted_ && !intx_disabled();
  if (output == intx_output_) return;
  intx_output_ = output;
  if (wiring_.intx != nullptr) wiring_.intx->SetLevel(wiring_.intx_line, output);
}

void PciFunction::SendMsi() {
  if (!bus_master() || !msi_enabled() || wiring_.msi == nullptr) {
    ++dropped_msis_;
    return;
  }
  wiring_.msi->SendMsi(msi_message(), requester_id());
}

absl::Status PciHost::Add(uint8_t devfn, PciFunction* function) {
  if (function == nullptr) return absl::InvalidArgumentError("PciHost::Add: null function");
  if (functions_[devfn] != nullptr || function->attached_) {
    return absl::AlreadyExistsError(absl::StrFormat(
        "PciHost::Add: %s at devfn %#x: the slot is taken or the function is on a bus",
        function->name(), devfn));
  }
  function->attached_ = true;
  function->devfn_ = devfn;
  functions_[devfn] = function;
  return absl::OkStatus();
}

PciFunction* PciHost::Target() const {
  if ((config_address_ & kEnable) == 0 || ((config_address_ >> 16) & 0xff) != 0) return nullptr;
  return functions_[(config_address_ >> 8) & 0xff];
}

uint32_t PciHost::ReadPiece(uint64_t offset, size_t size) const {
  if (offset < 4) return config_address_;
  const PciFunction* function = Target();
  if (function == nullptr) return 0xffffffff;
  const uint32_t reg = (config_address_ | (offset & 3)) & 0xff;
  return function->ConfigRead(reg, std::min<size_t>(size, kPciConfigSize - reg));
}

void PciHost::WritePiece(uint64_t offset, size_t size, uint32_t value) {
  if (offset < 4) {
    if (offset == 0 && size == 4) {
      config_address_ = value;
    } else {
      ++ignored_writes_;
    }
    return;
  }
  PciFunction* function = Target();
  if (function == nullptr) {
    ++ignored_writes_;
    return;
  }
  const uint32_t reg = (config_address_ | (offset & 3)) & 0xff;
  function->ConfigWrite(reg, value, std::min<size_t>(size, kPciConfigSize - reg));
}

void PciHost::Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) {
  for (size_t done = 0; done < data.size();) {
    const uint64_t at = offset + done;
    const size_t size = PieceSize(at, data.size() - done);
    const uint32_t value = at < kIoSize ? ReadPiece(at, size) : 0xffffffff;
    for (size_t i = 0; i < size; ++i) data[done + i] = static_cast<uint8_t>(value >> (8 * i));
    done += size;
  }
}

void PciHost::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) {
  for (size_t done = 0; done < data.size();) {
    const uint64_t at = offset + done;
    const size_t size = PieceSize(at, data.size() - done);
    if (at < kIoSize) WritePiece(at, size, LittleEndian(data.subspan(done, size)));
    done += size;
  }
}

Q35HostBridge::Q35HostBridge()
    : PciFunction(
          PciIdentity{
              .name = "q35-host-bridge",
              .vendor_id = 0x8086,  // Intel
              .device_id = 0x29c0,  // 82G33/G31/P35/P31 (Q35) DRAM controller
              .revision = 0,
              .class_code = 0x060000,  // host bridge
          },
          PciInterruptWiring{}) {}

}  // namespace minivmm
