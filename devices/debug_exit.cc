#include "devices/debug_exit.h"

#include <algorithm>
#include <cstddef>

namespace minivmm {

void DebugExit::Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) {
  std::fill(data.begin(), data.end(), uint8_t{0});
}

void DebugExit::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) {
  if (data.size() != 1 && data.size() != 2 && data.size() != 4) {
    ++ignored_writes_;
    return;
  }
  uint64_t value = 0;
  for (size_t i = 0; i < data.size(); ++i) value |= uint64_t{data[i]} << (8 * i);
  ctx.control.Shutdown(StatusFor(value));
}

}  // namespace minivmm
