#include "devices/ioapic.h"

#include <algorithm>
#include <cstddef>

namespace minivmm {
namespace {

constexpr uint64_t kIoapicOffsetMask = 0xff;  // QEMU decodes only these offset bits
constexpr uint8_t kIoapicRegId = 0x00;
constexpr uint8_t kIoapicRegVersion = 0x01;
constexpr uint8_t kIoapicRegArbitration = 0x02;
constexpr uint8_t kIoapicRegRedirection = 0x10;  // entry n: 0x10 + 2n (low), 0x11 + 2n (high)
constexpr uint32_t kIoapicIdShift = 24;
constexpr uint8_t kIoapicIdMask = 0xf;
constexpr uint64_t kIoapicDeliveryStatus = 1 << 12;
constexpr uint64_t kIoapicReadOnly = Ioapic::kRemoteIrr | kIoapicDeliveryStatus;
constexpr uint64_t kIoapicExtInt = 7;
constexpr uint64_t kIoapicMsiBase = 0xFEE00000;

uint64_t IoapicDeliveryMode(uint64_t entry) { return (entry >> 8) & 7; }

// Whether an access of `size` bytes reaches a register QEMU takes at any size.
bool IoapicAnySize(size_t size) { return size == 1 || size == 2 || size == 4; }

}  // namespace

Ioapic::Ioapic(MsiSink* sink, uint8_t id) : sink_(sink), reset_id_(id & kIoapicIdMask) { Reset(); }

void Ioapic::Reset() {
  id_ = reset_id_;
  regsel_ = 0;
  irr_ = 0;
  entries_.fill(kMasked);
  if (routes_changed_) routes_changed_();
}

void Ioapic::Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) {
  std::fill(data.begin(), data.end(), uint8_t{0});
  if (data.size() == 8) {  // QEMU's memory core splits it: at most 4 bytes per call
    ReadPiece(offset, data.first(4));
    ReadPiece(offset + 4, data.subspan(4));
    return;
  }
  ReadPiece(offset, data);
}

void Ioapic::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) {
  if (data.size() == 8) {
    WritePiece(offset, data.first(4));
    WritePiece(offset + 4, data.subspan(4));
    return;
  }
  WritePiece(offset, data);
}

void Ioapic::ReadPiece(uint64_t offset, std::span<uint8_t> data) {
  const uint64_t reg = offset & kIoapicOffsetMask;
  uint32_t value = 0;
  if (offset < kIoSize && reg == kRegSel && IoapicAnySize(data.size())) {
    value = regsel_;
  } else if (offset < kIoSize && reg == kWindow && data.size() == 4) {
    value = ReadWindow();
  } else {
    ++counters_.ignored_accesses;
    return;
  }
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(value >> (8 * i));
}

void Ioapic::WritePiece(uint64_t offset, std::span<const uint8_t> data) {
  const uint64_t reg = offset & kIoapicOffsetMask;
  uint32_t value = 0;
  for (size_t i = 0; i < data.size() && i < 4; ++i) value |= uint32_t{data[i]} << (8 * i);
  if (offset < kIoSize && reg == kRegSel && IoapicAnySize(data.size())) {
    regsel_ = static_cast<uint8_t>(value);
  } else if (offset < kIoSize && reg == kWindow && data.size() == 4) {
    WriteWindow(value);
  } else if (offset < kIoSize && reg == kEoi && data.size() == 4 && value <= 0xff) {
    Eoi(static_cast<uint8_t>(value));
  } else {
    ++counters_.ignored_accesses;
  }
}

uint32_t Ioapic::ReadWindow() {
  switch (regsel_) {
    case kIoapicRegId:
    case kIoapicRegArbitration:
      return uint32_t{id_} << kIoapicIdShift;
    case kIoapicRegVersion:
      return kVersion;
  }
  if (regsel_ < kIoapicRegRedirection || regsel_ >= kIoapicRegRedirection + 2 * kPins) {
    ++counters_.ignored_register_accesses;
    return 0;
  }
  const uint64_t entry = entries_[(regsel_ - kIoapicRegRedirection) / 2];
  return static_cast<uint32_t>((regsel_ & 1) != 0 ? entry >> 32 : entry);
}

void Ioapic::WriteWindow(uint32_t value) {
  if (regsel_ == kIoapicRegId) {
    id_ = (value >> kIoapicIdShift) & kIoapicIdMask;
    return;
  }
  if (regsel_ < kIoapicRegRedirection || regsel_ >= kIoapicRegRedirection + 2 * kPins) {
    ++counters_.ignored_register_accesses;  // version, arbitration, or nothing
    return;
  }
  uint64_t& entry = entries_[(regsel_ - kIoapicRegRedirection) / 2];
  const uint64_t read_only = entry & kIoapicReadOnly;
  if ((regsel_ & 1) != 0) {
    entry = (entry & 0xffffffffu) | uint64_t{value} << 32;
  } else {
    entry = (entry & ~uint64_t{0xffffffffu}) | value;
  }
  entry = (entry & ~kIoapicReadOnly) | read_only;
  // Linux clears a stuck remote IRR by switching the entry to edge and back.
  if ((entry & kLevel) == 0) entry &= ~kRemoteIrr;
  if (routes_changed_) routes_changed_();
  Service();
}

void Ioapic::SetLevel(uint32_t pin, bool high) {
  if (pin >= kPins) {
    ++counters_.bad_pins;
    return;
  }
  const uint32_t bit = uint32_t{1} << pin;
  const uint64_t entry = entries_[pin];
  if ((entry & kLevel) != 0) {
    if (!high) {
      irr_ &= ~bit;
      return;
    }
    irr_ |= bit;
    if ((entry & kRemoteIrr) == 0) Service();
  } else if (high && (entry & kMasked) == 0) {  // the 82093AA ignores masked edges
    irr_ |= bit;
    Service();
  }
}

void Ioapic::Eoi(uint8_t vector) {
  bool pending = false;
  for (uint32_t pin = 0; pin < kPins; ++pin) {
    uint64_t& entry = entries_[pin];
    if ((entry & 0xff) != vector || (entry & kLevel) == 0 || (entry & kRemoteIrr) == 0) continue;
    entry &= ~kRemoteIrr;
    if ((entry & kMasked) == 0 && (irr_ & (uint32_t{1} << pin)) != 0) pending = true;
  }
  if (pending) Service();
}

void Ioapic::Service() {
  for (uint32_t pin = 0; pin < kPins; ++pin) {
    uint64_t& entry = entries_[pin];
    const uint32_t bit = uint32_t{1} << pin;
    if ((irr_ & bit) == 0 || (entry & kMasked) != 0) continue;
    if ((entry & kLevel) != 0) {
      if ((entry & kRemoteIrr) != 0) continue;  // the guest has not EOIed the last one
      entry |= kRemoteIrr;
    } else {
      irr_ &= ~bit;
    }
    if (IoapicDeliveryMode(entry) == kIoapicExtInt) {
      ++counters_.extint_dropped;
      continue;
    }
    ++counters_.sent;
    sink_->SendMsi(MessageOf(pin), std::nullopt);
  }
}

MsiMessage Ioapic::MessageOf(uint32_t pin) const {
  if (pin >= kPins) return {};
  const uint64_t entry = entries_[pin];
  const uint64_t dest_idx = entry >> 48;
  const uint64_t dest_mode = (entry >> 11) & 1;
  return MsiMessage{
      .address = kIoapicMsiBase | dest_idx << 4 | dest_mode << 2,
      .data =
          static_cast<uint32_t>((entry & 0xff) | IoapicDeliveryMode(entry) << 8 | (entry & kLevel)),
  };
}

}  // namespace minivmm
