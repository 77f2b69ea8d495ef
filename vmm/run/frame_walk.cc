#include "vmm/run/frame_walk.h"

#include <array>
#include <optional>

namespace minivmm {
namespace {

// Bits 63..47 all equal: a 48-bit canonical address.
bool Canonical(uint64_t va) {
  const uint64_t top = va >> 47;
  return top == 0 || top == 0x1ffff;
}

}  // namespace

int WalkFrames(const GuestMemory& memory, uint64_t rip, uint64_t rbp, std::span<uint64_t> out,
               bool code32) {
  out[0] = rip;
  size_t filled = 1;
  uint64_t previous = 0;  // a zero RBP ends the chain, as it ends Linux's
  if (code32) [[unlikely]] {
    uint32_t ebp = static_cast<uint32_t>(rbp);
    while (filled < out.size()) {
      if (ebp % 4 != 0 || ebp <= previous) break;
      const std::optional<std::array<uint32_t, 2>> frame =
          memory.ReadObj<std::array<uint32_t, 2>>(GuestAddress(ebp));
      if (!frame || (*frame)[1] == 0) break;
      out[filled++] = (*frame)[1];
      previous = ebp;
      ebp = (*frame)[0];
    }
    return static_cast<int>(filled);
  }
  while (filled < out.size()) {
    if (!Canonical(rbp) || rbp % 8 != 0 || rbp <= previous) break;
    const std::optional<std::array<uint64_t, 2>> frame =
        memory.ReadObj<std::array<uint64_t, 2>>(GuestAddress(rbp));
    if (!frame || (*frame)[1] == 0) break;
    out[filled++] = (*frame)[1];
    previous = rbp;
    rbp = (*frame)[0];
  }
  return static_cast<int>(filled);
}

}  // namespace minivmm
