#include "devices/acpi_pm1.h"

#include <cstddef>

namespace minivmm {
namespace {

uint8_t ByteOf(uint16_t value, uint64_t byte) { return static_cast<uint8_t>(value >> (8 * byte)); }

// `value` with byte `byte` replaced by `b`.
uint16_t WithByte(uint16_t value, uint64_t byte, uint8_t b) {
  const uint16_t mask = static_cast<uint16_t>(0xFF << (8 * byte));
  return static_cast<uint16_t>((value & ~mask) | (uint16_t{b} << (8 * byte)));
}

}  // namespace

void AcpiPm1Events::Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) {
  for (size_t i = 0; i < data.size(); ++i) {
    const uint64_t at = offset + i;
    data[i] = at < 2 ? ByteOf(state_->status, at) : at < 4 ? ByteOf(state_->enable, at - 2) : 0;
  }
}

void AcpiPm1Events::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) {
  for (size_t i = 0; i < data.size(); ++i) {
    const uint64_t at = offset + i;
    if (at < 2) {
      state_->status &= static_cast<uint16_t>(~(uint16_t{data[i]} << (8 * at)));
    } else if (at < 4) {
      state_->enable = WithByte(state_->enable, at - 2, data[i]) & kPm1EnableBits;
    }
  }
}

void AcpiPm1Control::Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) {
  const uint16_t value = state_->control | kPm1SciEn;
  for (size_t i = 0; i < data.size(); ++i) data[i] = offset + i < 2 ? ByteOf(value, offset + i) : 0;
}

void AcpiPm1Control::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) {
  uint16_t written = state_->control;
  bool high_byte = false;
  for (size_t i = 0; i < data.size(); ++i) {
    const uint64_t at = offset + i;
    if (at >= 2) continue;
    written = WithByte(written, at, data[i]);
    high_byte |= at == 1;
  }
  state_->control = written & (kPm1BmRld | kPm1SlpTyp);
  if (high_byte && (written & kPm1SlpEn) != 0) {
    ++sleeps_;
    sleeper_->Sleep(static_cast<uint8_t>((written & kPm1SlpTyp) >> kPm1SlpTypShift), ctx);
  }
}

}  // namespace minivmm
