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

int WalkFrames(const GuestMemory& memory, uint64_t rip, uint64_t rbp, std::span<uint64_t> out) {
  out[0] = rip;
  size_t filled = 1;
  uint64_t previous = 0;  // a zero RBP ends the chain, as it ends Linux's
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
