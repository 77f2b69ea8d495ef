#include "devices/uart16550.h"

#include <cstddef>

namespace minivmm {
namespace {

enum Register : uint64_t {
  kRbrThrDll = 0,
  kIerDlm = 1,
  kIirFcr = 2,
  kLcr = 3,
  kMcr = 4,
  kLsr = 5,
  kMsr = 6,
  kScr = 7,
};

constexpr uint8_t kIirNoInterrupt = 0x01;
constexpr uint8_t kIirFifosEnabled = 0xC0;
constexpr uint8_t kLsrDataReady = 0x01;
constexpr uint8_t kLsrThrEmpty = 0x20;
constexpr uint8_t kLsrTransmitterEmpty = 0x40;
constexpr uint8_t kMsrCts = 0x10, kMsrDsr = 0x20, kMsrRi = 0x40, kMsrDcd = 0x80;
constexpr uint8_t kMcrDtr = 0x01, kMcrRts = 0x02, kMcrOut1 = 0x04, kMcrOut2 = 0x08;

}  // namespace

void Uart16550::Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) {
  for (size_t i = 0; i < data.size(); ++i) data[i] = ReadRegister(offset + i);
}

void Uart16550::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) {
  for (size_t i = 0; i < data.size(); ++i) WriteRegister(offset + i, data[i]);
}

uint8_t Uart16550::ModemStatus() const {
  if (!Loopback()) return kMsrDcd | kMsrDsr | kMsrCts;  // a terminal is always there
  uint8_t msr = 0;
  if (mcr_ & kMcrRts) msr |= kMsrCts;
  if (mcr_ & kMcrDtr) msr |= kMsrDsr;
  if (mcr_ & kMcrOut1) msr |= kMsrRi;
  if (mcr_ & kMcrOut2) msr |= kMsrDcd;
  return msr;
}

uint8_t Uart16550::ReadRegister(uint64_t offset) {
  switch (offset) {
    case kRbrThrDll:
      if (Dlab()) return dll_;
      data_ready_ = false;
      return rbr_;
    case kIerDlm:
      return Dlab() ? dlm_ : ier_;
    case kIirFcr:
      return kIirNoInterrupt | (fifo_enabled_ ? kIirFifosEnabled : 0);
    case kLcr:
      return lcr_;
    case kMcr:
      return mcr_;
    case kLsr:
      return kLsrThrEmpty | kLsrTransmitterEmpty | (data_ready_ ? kLsrDataReady : 0);
    case kMsr:
      return ModemStatus();
    case kScr:
      return scr_;
    default:
      return 0xFF;  // past the 8 registers: nothing drives the bus
  }
}

void Uart16550::WriteRegister(uint64_t offset, uint8_t value) {
  switch (offset) {
    case kRbrThrDll:
      if (Dlab()) {
        dll_ = value;
      } else {
        Transmit(value);
      }
      break;
    case kIerDlm:
      if (Dlab()) {
        dlm_ = value;
      } else {
        ier_ = value & 0x0F;  // the upper bits are reserved on a 16550
      }
      break;
    case kIirFcr:
      fifo_enabled_ = (value & 0x01) != 0;
      break;
    case kLcr:
      lcr_ = value;
      break;
    case kMcr:
      mcr_ = value & 0x1F;
      break;
    case kScr:
      scr_ = value;
      break;
    default:
      break;  // LSR and MSR are read-only; past the end is nothing
  }
}

void Uart16550::Transmit(uint8_t byte) {
  if (Loopback()) {
    rbr_ = byte;  // a second byte before the guest reads simply overruns
    data_ready_ = true;
    return;
  }
  ++bytes_transmitted_;
  if (console_ != nullptr) {
    const char c = static_cast<char>(byte);
    console_->Write(std::string_view(&c, 1));
  }
}

}  // namespace minivmm
