#include "devices/pc_testdev.h"

#include <cstddef>

namespace minivmm {
namespace {

// Whether byte i of an access at `offset` lies inside a device of `size`
// bytes, compared without adding, so that no offset can wrap into it.
bool Inside(uint64_t offset, size_t i, uint64_t size) { return offset < size && i < size - offset; }

// The data register's byte number for port offset `at`, or -1 for the
// flush-page port (0xe0-0xe3 and its alias 0xe8-0xeb are the same register).
int DataByte(uint64_t at) {
  if (at < PcTestdevPorts::kFlushOffset) return static_cast<int>(at);
  if (at >= PcTestdevPorts::kDataAliasOffset) return static_cast<int>(at & 3);
  return -1;
}

}  // namespace

void PcTestdevPorts::Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) {
  for (size_t i = 0; i < data.size(); ++i) {
    const int byte = Inside(offset, i, kIoSize) ? DataByte(offset + i) : -1;
    data[i] = byte >= 0 ? static_cast<uint8_t>(data_ >> (8 * byte)) : 0;
  }
}

void PcTestdevPorts::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) {
  bool touched_flush = false;
  for (size_t i = 0; i < data.size() && Inside(offset, i, kIoSize); ++i) {
    const int byte = DataByte(offset + i);
    if (byte < 0) {
      touched_flush = true;
      continue;
    }
    data_ = (data_ & ~(uint32_t{0xff} << (8 * byte))) | (uint32_t{data[i]} << (8 * byte));
  }
  if (!touched_flush) return;
  // QEMU takes only a whole 4-byte piece at 0xe4; the access covers it iff it
  // starts at or before kFlushOffset and ends at or after kFlushOffset + 4.
  if (offset <= kFlushOffset && data.size() >= kFlushOffset + 4 - offset) {
    const size_t at = kFlushOffset - offset;
    last_flush_address_ = uint32_t{data[at]} | uint32_t{data[at + 1]} << 8 |
                          uint32_t{data[at + 2]} << 16 | uint32_t{data[at + 3]} << 24;
    ++flush_requests_;
    pages_->FlushHostPage(last_flush_address_ & ~uint32_t{0xfff});
  } else {
    ++ignored_writes_;
  }
}

void PcTestdevIrq::Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) {
  for (uint8_t& byte : data) byte = 0;
}

void PcTestdevIrq::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) {
  for (size_t i = 0; i < data.size() && Inside(offset, i, kIoSize); ++i) {
    const uint64_t line = offset + i;
    if (line >= kIsaIrqs) {
      ++ignored_writes_;
      continue;
    }
    lines_->SetLevel(static_cast<uint32_t>(line), data[i] != 0);
  }
}

void PcTestdevIomem::Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) {
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = Inside(offset, i, kIoSize) ? bytes_[offset + i] : 0;
  }
}

void PcTestdevIomem::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) {
  for (size_t i = 0; i < data.size() && Inside(offset, i, kIoSize); ++i) {
    bytes_[offset + i] = data[i];
  }
}

}  // namespace minivmm
