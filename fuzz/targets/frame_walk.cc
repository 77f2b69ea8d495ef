// Fuzzes WalkFrames (vmm/run/frame_walk.h) over guest RAM of a size and
// fill the input picks, holding frame chains the input lays out: ascending
// chains, self-loops, loops back to the first frame, chains that run off the
// end of RAM or straddle it, chains longer than the output span; and an RBP
// at a chain, near one, or anywhere (zero, misaligned, non-canonical, past
// RAM, wrapping near 2^64).
//
// Input: u8 RAM size (% 8: 0-1 0x1000, 2 0x4000, 3 0x12000, 4 none, 5 16,
// 6 24, 7 u16 % 0x2000 + 1 bytes), u8 fill, u8 output span (% 32 + 1
// frames), u64 rip, u8 rbp mode (% 4: 0-1 the start of chain k % chains,
// 2 the first chain's start + (i8) k, 3 an Address; zero for 0-2 without
// chains), u8 k, [Address for 3];
// then up to 16 chains to the end: Address start, u8 frames (% 40), i8
// stride (x 8 bytes: 0 a self-loop, negative descends), u8 last saved RBP
// (% 4: 0 zero, 1 the first frame, 2 the last frame itself, 3 an Address),
// [Address for 3], u64 first return address (frame k's is that + k, so
// 2^64 - k makes frame k's zero). Frames are written in order, each
// [saved RBP, return address] clipped to RAM. Address: u8 tag (% 8) and its
// operand, see Address() below.
// Invariants: WalkFrames returns exactly the frames of an independent walk
// of the documented rules (1 <= n <= span, out[0] == rip, out[i] the return
// address of the i-th frame); RAM is unchanged. RAM is an exact-size heap
// buffer, so ASan reports any read outside it.
#include "vmm/run/frame_walk.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "common/input.h"
#include "minivmm/exit_sites.h"

namespace minivmm::fuzz {
namespace {

constexpr int kMaxChains = 16;
constexpr uint64_t kMaxChainFrames = 40;

// RAM of exactly `size` bytes on the heap. The page-multiple sizes are
// kept across inputs, as FuzzVm::UseRamOfSize keeps them.
std::span<uint8_t> Ram(uint64_t size, std::unique_ptr<uint8_t[]>& owned) {
  static auto* cache = new std::map<uint64_t, std::unique_ptr<uint8_t[]>>;
  if (size == 0) return {};
  std::unique_ptr<uint8_t[]>& slot = size % 0x1000 == 0 ? (*cache)[size] : owned;
  if (!slot) slot = std::make_unique<uint8_t[]>(size);
  return {slot.get(), size};
}

uint64_t RamSize(Input& in) {
  switch (in.U8() % 8) {
    case 0:
    case 1:
      return 0x1000;
    case 2:
      return 0x4000;
    case 3:
      return 0x12000;
    case 4:
      return 0;
    case 5:
      return 16;  // one frame
    case 6:
      return 24;  // a frame at 16 straddles the end
    default:
      return in.U16() % 0x2000 + 1;  // any byte count
  }
}

// A frame pointer: mostly an aligned one inside RAM or near its end, else
// anything the walk must refuse.
uint64_t Address(Input& in, uint64_t ram_size) {
  switch (in.U8() % 8) {
    case 0:
      return ram_size > 0 ? in.U16() % ram_size & ~uint64_t{7} : 0;
    case 1:
      return ram_size - in.U8();  // at / below the end of RAM
    case 2:
      return ram_size + in.U8();  // past RAM
    case 3:
      return in.U64();
    case 4:
      return ~uint64_t{0} - in.U16();  // + 16 wraps
    case 5:
      return uint64_t{1} << (in.U8() % 64);  // non-canonical from bit 47 up
    case 6:
      return 0xFFFF800000000000ull + in.U16();  // canonical high half
    default:
      return in.U16();  // any alignment
  }
}

// Writes the frame [saved_rbp, return_address] at `at`, as much of it as
// lies inside RAM.
void PutFrame(std::span<uint8_t> ram, uint64_t at, uint64_t saved_rbp, uint64_t return_address) {
  if (at >= ram.size()) return;
  const std::array<uint64_t, 2> frame = {saved_rbp, return_address};
  std::memcpy(ram.data() + at, frame.data(), std::min<uint64_t>(sizeof(frame), ram.size() - at));
}

// The walk as frame_walk.h documents it, over a copy of RAM.
size_t ReferenceWalk(std::span<const uint8_t> ram, uint64_t rip, uint64_t rbp,
                     std::span<uint64_t> want) {
  want[0] = rip;
  size_t n = 1;
  uint64_t previous = 0;
  for (; n < want.size(); ++n) {
    const bool canonical = static_cast<uint64_t>(static_cast<int64_t>(rbp << 16) >> 16) == rbp;
    const bool in_ram = rbp <= ram.size() && ram.size() - rbp >= 16;
    if (!canonical || rbp % 8 != 0 || rbp == 0 || !in_ram || (n > 1 && rbp <= previous)) break;
    uint64_t saved_rbp, return_address;
    std::memcpy(&saved_rbp, ram.data() + rbp, 8);
    std::memcpy(&return_address, ram.data() + rbp + 8, 8);
    if (return_address == 0) break;
    want[n] = return_address;
    previous = rbp;
    rbp = saved_rbp;
  }
  return n;
}

}  // namespace
}  // namespace minivmm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace minivmm;
  using namespace minivmm::fuzz;
  Input in(data, size);
  std::unique_ptr<uint8_t[]> owned;
  const std::span<uint8_t> ram = Ram(RamSize(in), owned);
  std::fill(ram.begin(), ram.end(), in.U8());
  const size_t span = in.U8() % kMaxSiteFrames + 1;
  const uint64_t rip = in.U64();
  const uint8_t rbp_mode = in.U8() % 4;
  const uint8_t rbp_arg = in.U8();
  uint64_t rbp = rbp_mode == 3 ? Address(in, ram.size()) : 0;

  std::vector<uint64_t> starts;
  while (!in.empty() && starts.size() < kMaxChains) {
    const uint64_t start = Address(in, ram.size());
    const uint64_t frames = in.U8() % kMaxChainFrames;
    const uint64_t stride = static_cast<uint64_t>(int64_t{static_cast<int8_t>(in.U8())} * 8);
    uint64_t last_saved = 0;
    switch (in.U8() % 4) {
      case 1:
        last_saved = start;
        break;
      case 2:
        last_saved = start + (frames > 0 ? frames - 1 : 0) * stride;
        break;
      case 3:
        last_saved = Address(in, ram.size());
        break;
      default:
        break;
    }
    const uint64_t return_address = in.U64();
    for (uint64_t k = 0; k < frames; ++k) {
      const uint64_t at = start + k * stride;
      PutFrame(ram, at, k + 1 < frames ? at + stride : last_saved, return_address + k);
    }
    starts.push_back(start);
  }
  if (rbp_mode < 2 && !starts.empty()) rbp = starts[rbp_arg % starts.size()];
  if (rbp_mode == 2 && !starts.empty()) rbp = starts[0] + static_cast<int8_t>(rbp_arg);

  static auto* before = new std::vector<uint8_t>;
  before->assign(ram.begin(), ram.end());
  std::vector<uint64_t> out(span);  // exact size: a write past it is an ASan report
  const int n = WalkFrames(GuestMemory(ram), rip, rbp, out);
  FUZZ_CHECK(std::equal(ram.begin(), ram.end(), before->begin(), before->end()));
  std::array<uint64_t, kMaxSiteFrames> want;
  const size_t want_n = ReferenceWalk(*before, rip, rbp, std::span(want).first(span));
  FUZZ_CHECK(n >= 1 && static_cast<size_t>(n) <= span);
  FUZZ_CHECK(static_cast<size_t>(n) == want_n);
  FUZZ_CHECK(out[0] == rip);
  FUZZ_CHECK(std::equal(out.begin(), out.begin() + n, want.begin()));
  return 0;
}
