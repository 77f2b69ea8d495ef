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

// Every 32-bit frame pointer is an address.
bool AnyAddress(uint64_t) { return true; }

// The chain of frames of one width: each frame at `fp` is {the caller's
// frame pointer, the return address}, in Word-sized slots. A frame pointer
// that is unaligned, not above the last one, or (64-bit) not canonical ends
// the chain, as does an unreadable frame or a zero return address.
template <typename Word, bool (*Plausible)(uint64_t)>
int WalkChain(const GuestMemory& memory, Word fp, std::span<uint64_t> out, size_t filled) {
  uint64_t previous = 0;  // a zero frame pointer ends the chain, as it ends Linux's
  while (filled < out.size()) {
    if (!Plausible(fp) || fp % sizeof(Word) != 0 || fp <= previous) break;
    const std::optional<std::array<Word, 2>> frame =
        memory.ReadObj<std::array<Word, 2>>(GuestAddress(fp));
    if (!frame || (*frame)[1] == 0) break;
    out[filled++] = (*frame)[1];
    previous = fp;
    fp = (*frame)[0];
  }
  return static_cast<int>(filled);
}

}  // namespace

int WalkFrames(const GuestMemory& memory, uint64_t rip, uint64_t rbp, std::span<uint64_t> out,
               bool code32) {
  out[0] = rip;
  if (code32) [[unlikely]]
    return WalkChain<uint32_t, AnyAddress>(memory, static_cast<uint32_t>(rbp), out, 1);
  return WalkChain<uint64_t, Canonical>(memory, rbp, out, 1);
}

}  // namespace minivmm
