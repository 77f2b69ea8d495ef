#include "devices/fw_cfg.h"

#include <algorithm>
#include <cstddef>

namespace minivmm {
namespace {

// `value` as `bytes` bytes, least significant first (QEMU's cpu_to_le*).
std::vector<uint8_t> LittleEndian(uint64_t value, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
  return out;
}

}  // namespace

FwCfg::FwCfg(const FwCfgConfig& config) {
  items_[kFwCfgSignature] = {'Q', 'E', 'M', 'U'};
  items_[kFwCfgId] = LittleEndian(1, 4);
  items_[kFwCfgRamSize] = LittleEndian(config.ram_bytes, 8);
  items_[kFwCfgNoGraphic] = LittleEndian(1, 2);
  items_[kFwCfgNbCpus] = LittleEndian(config.cpus, 2);
  items_[kFwCfgMaxCpus] = LittleEndian(config.cpus, 2);
  // The directory's count is big-endian, unlike every number above; 0 reads
  // the same either way, but a directory with files must keep this order.
  items_[kFwCfgFileDir] = {0, 0, 0, 0};
  Select(kFwCfgSignature);
}

void FwCfg::Select(uint16_t key) {
  read_offset_ = 0;
  const uint16_t index = key & ~(kFwCfgWriteChannel | kFwCfgArchLocal);
  const bool known =
      (key & kFwCfgArchLocal) == 0 && index < items_.size() && !items_[index].empty();
  selected_ = known ? &items_[index] : nullptr;
}

uint8_t FwCfg::NextByte() {
  if (selected_ == nullptr || read_offset_ >= selected_->size()) return 0;
  return (*selected_)[read_offset_++];
}

void FwCfg::Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) {
  std::fill(data.begin(), data.end(), uint8_t{0});
  if (data.size() == 1) data[0] = NextByte();
}

void FwCfg::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) {
  if (offset != kSelectorOffset || data.size() != 2) {
    ++ignored_writes_;
    return;
  }
  Select(static_cast<uint16_t>(data[0] | (data[1] << 8)));
}

}  // namespace minivmm
