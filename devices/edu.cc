#include "devices/edu.h"

#include <algorithm>
#include <bit>

namespace minivmm {
namespace {

// The next piece of an MMIO access at `at` with `left` bytes to go, as
// QEMU's memory_access_size cuts it for edu (max_access_size 8): no larger
// than the offset's alignment, a power of two.
size_t PieceSize(uint64_t at, size_t left) {
  size_t size = std::min<size_t>(left, 8);
  if (at != 0) size = std::min<size_t>(size, at & -at);
  return std::bit_floor(size);
}

// Whether [start, start + count) lies inside the DMA buffer, without
// overflow (QEMU's edu_check_range).
bool InsideBuffer(uint64_t start, uint64_t count) {
  return start >= Edu::kDmaBufferAddress && count <= Edu::kDmaBufferSize &&
         start - Edu::kDmaBufferAddress <= Edu::kDmaBufferSize - count;
}

}  // namespace

Edu::Edu(const PciInterruptWiring& wiring, DmaSpace* dma)
    : PciFunction(
          PciIdentity{
              .name = "edu",
              .vendor_id = 0x1234,
              .device_id = 0x11e8,
              .revision = 0x10,
              .class_code = 0x00ff00,
              .interrupt_pin = 1,
          },
          wiring),
      dma_(dma) {
  AddMsiCapability();
  DeclareMemoryBar(0, kBar0Size, &registers_);
}

void Edu::Registers::Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) {
  for (size_t done = 0; done < data.size();) {
    const uint64_t at = offset + done;
    const size_t size = PieceSize(at, data.size() - done);
    uint64_t value = 0;  // what QEMU's memory core reads for a refused piece
    if (size >= 4 && at < kBar0Size) {
      value = edu_->ReadRegister(at, size);
    } else {
      ++edu_->ignored_accesses_;
    }
    for (size_t i = 0; i < size; ++i) data[done + i] = static_cast<uint8_t>(value >> (8 * i));
    done += size;
  }
}

void Edu::Registers::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) {
  for (size_t done = 0; done < data.size();) {
    const uint64_t at = offset + done;
    const size_t size = PieceSize(at, data.size() - done);
    uint64_t value = 0;
    for (size_t i = 0; i < size; ++i) value |= uint64_t{data[done + i]} << (8 * i);
    if (size >= 4 && at < kBar0Size) {
      edu_->WriteRegister(at, size, value);
    } else {
      ++edu_->ignored_accesses_;
    }
    done += size;
  }
}

uint64_t Edu::ReadRegister(uint64_t offset, size_t size) {
  if (offset < 0x80 && size != 4) {
    ++ignored_accesses_;
    return ~uint64_t{0};
  }
  switch (offset) {
    case kId:
      return 0x010000ed;
    case kLiveness:
      return liveness_;
    case kFactorial:
      return factorial_;
    case kStatus:
      return status_;
    case kIrqStatus:
      return irq_status_;
    case kDmaSource:
      return dma_source_;
    case kDmaDestination:
      return dma_destination_;
    case kDmaCount:
      return dma_count_;
    case kDmaCommand:
      return dma_command_;
    default:
      return ~uint64_t{0};
  }
}

void Edu::WriteRegister(uint64_t offset, size_t size, uint64_t value) {
  if (offset < 0x80 && size != 4) {
    ++ignored_accesses_;
    return;
  }
  const uint32_t low = static_cast<uint32_t>(value);
  switch (offset) {
    case kLiveness:
      liveness_ = ~low;
      break;
    case kFactorial: {
      // QEMU's edu_fact_thread, run here and now; status bit 0 never sets.
      uint32_t product = 1;
      for (uint32_t n = low; n > 0 && product != 0; --n) product *= n;
      factorial_ = product;
      if (status_ & kStatusIrqFactorial) RaiseIrq(kIrqFactorial);
      break;
    }
    case kStatus:
      status_ = (status_ & ~kStatusIrqFactorial) | (low & kStatusIrqFactorial);
      break;
    case kIrqRaise:
      RaiseIrq(low);
      break;
    case kIrqAck:
      LowerIrq(low);
      break;
    case kDmaSource:
      dma_source_ = value;
      break;
    case kDmaDestination:
      dma_destination_ = value;
      break;
    case kDmaCount:
      dma_count_ = value;
      break;
    case kDmaCommand:
      if ((value & kDmaStart) == 0) break;  // QEMU ignores it
      dma_command_ = value;
      RunDma();
      break;
    default:
      ++ignored_accesses_;
      break;
  }
}

void Edu::RaiseIrq(uint32_t bits) {
  irq_status_ |= bits;
  if (irq_status_ == 0) return;
  if (msi_enabled()) {
    SendMsi();
  } else {
    SetIntx(true);
  }
}

void Edu::LowerIrq(uint32_t bits) {
  irq_status_ &= ~bits;
  if (irq_status_ == 0 && !msi_enabled()) SetIntx(false);
}

// QEMU's edu_dma_timer, run when the command is written.
void Edu::RunDma() {
  const bool to_ram = dma_command_ & kDmaToRam;
  const uint64_t buffer_side = to_ram ? dma_source_ : dma_destination_;
  const uint64_t ram_side = (to_ram ? dma_destination_ : dma_source_) & kDmaMask;
  if (!InsideBuffer(buffer_side, dma_count_)) {
    ++refused_dmas_;
  } else if (!bus_master()) {
    ++dmas_without_master_;
  } else {
    // Safe: InsideBuffer put [at, at + count) inside dma_buffer_.
    const std::span<uint8_t> at =
        std::span(dma_buffer_).subspan(buffer_side - kDmaBufferAddress, dma_count_);
    bool ok;
    if (to_ram) {
      ok = dma_->Write(requester_id(), ram_side, at);
    } else {
      // Through a copy, so that a failed read leaves the buffer as it was.
      std::array<uint8_t, kDmaBufferSize> copy;
      const std::span<uint8_t> in = std::span(copy).first(at.size());
      ok = dma_->Read(requester_id(), ram_side, in);
      if (ok) std::copy(in.begin(), in.end(), at.begin());
    }
    if (!ok) ++dma_errors_;
  }
  dma_command_ &= ~kDmaStart;
  if (dma_command_ & kDmaIrq) RaiseIrq(kIrqDma);
}

}  // namespace minivmm
