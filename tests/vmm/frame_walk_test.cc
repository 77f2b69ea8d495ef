#include "vmm/run/frame_walk.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "minivmm/exit_sites.h"

namespace minivmm {
// A namespace of the file's own: the test binaries are unity builds.
namespace frame_walk_test {
namespace {

using ::testing::ElementsAre;

constexpr uint64_t kRamSize = 0x1000;
constexpr uint64_t kRip = 0x100123;

// A guest RAM of kRamSize bytes in which tests lay out frames.
class FrameWalkTest : public ::testing::Test {
 protected:
  // Writes the frame [saved_rbp, return_address] at `rbp`.
  void Frame(uint64_t rbp, uint64_t saved_rbp, uint64_t return_address) {
    const std::array<uint64_t, 2> frame = {saved_rbp, return_address};
    ASSERT_TRUE(memory_.WriteObj(GuestAddress(rbp), frame));
  }
  std::vector<uint64_t> Walk(uint64_t rbp, size_t depth = kMaxSiteFrames) {
    std::vector<uint64_t> out(depth);
    out.resize(WalkFrames(memory_, kRip, rbp, out));
    return out;
  }

  std::vector<uint8_t> ram_ = std::vector<uint8_t>(kRamSize);
  GuestMemory memory_{ram_};
};

// 32-bit code (the PC machine's guests before long mode): frames of two
// 32-bit words, the upper half of RBP ignored, 4-byte alignment enough.
TEST_F(FrameWalkTest, ThirtyTwoBitCodeHasFramesOfTwoWords) {
  const std::array<uint32_t, 2> inner = {0x204, 0x100200};
  const std::array<uint32_t, 2> outer = {0, 0x100300};
  ASSERT_TRUE(memory_.WriteObj(GuestAddress(0x104), inner));
  ASSERT_TRUE(memory_.WriteObj(GuestAddress(0x204), outer));
  std::vector<uint64_t> out(kMaxSiteFrames);
  out.resize(WalkFrames(memory_, kRip, 0xdead00000000'0104ull, out, /*code32=*/true));
  EXPECT_THAT(out, ElementsAre(kRip, 0x100200u, 0x100300u));
  // Read as 64-bit frames the same bytes are one frame of nonsense.
  out.assign(kMaxSiteFrames, 0);
  out.resize(WalkFrames(memory_, kRip, 0x104, out));
  EXPECT_NE(out, (std::vector<uint64_t>{kRip, 0x100200u, 0x100300u}));
}

TEST_F(FrameWalkTest, FollowsTheChainToAZeroFramePointer) {
  Frame(0x100, 0x200, 0xaaa);
  Frame(0x200, 0x300, 0xbbb);
  Frame(0x300, 0, 0xccc);
  EXPECT_THAT(Walk(0x100), ElementsAre(kRip, 0xaaa, 0xbbb, 0xccc));
}

TEST_F(FrameWalkTest, StopsAtALoop) {
  Frame(0x100, 0x200, 0xaaa);
  Frame(0x200, 0x100, 0xbbb);  // back to the first frame
  EXPECT_THAT(Walk(0x100), ElementsAre(kRip, 0xaaa, 0xbbb));
}

TEST_F(FrameWalkTest, StopsAtAFrameThatPointsAtItself) {
  Frame(0x100, 0x100, 0xaaa);
  EXPECT_THAT(Walk(0x100), ElementsAre(kRip, 0xaaa));
}

TEST_F(FrameWalkTest, StopsAtAFramePointerOutOfRam) {
  Frame(0x100, kRamSize - 8, 0xaaa);  // the frame's second word is past the end
  EXPECT_THAT(Walk(0x100), ElementsAre(kRip, 0xaaa));
  EXPECT_THAT(Walk(kRamSize), ElementsAre(kRip));
}

TEST_F(FrameWalkTest, StopsAtANonCanonicalFramePointer) {
  Frame(0x100, 0x0000800000000000ull, 0xaaa);
  EXPECT_THAT(Walk(0x100), ElementsAre(kRip, 0xaaa));
}

TEST_F(FrameWalkTest, StopsAtAMisalignedFramePointer) {
  Frame(0x100, 0x204, 0xaaa);
  Frame(0x204, 0, 0xbbb);
  EXPECT_THAT(Walk(0x100), ElementsAre(kRip, 0xaaa));
}

TEST_F(FrameWalkTest, StopsAtAZeroReturnAddress) {
  Frame(0x100, 0x200, 0);
  EXPECT_THAT(Walk(0x100), ElementsAre(kRip));
}

TEST_F(FrameWalkTest, StopsAtTheDepthBound) {
  // 100 increasing frames, 16 bytes apart: only the bound ends the walk.
  for (uint64_t i = 0; i < 100; ++i) Frame(0x100 + 16 * i, 0x100 + 16 * (i + 1), 0x1000 + i);
  const std::vector<uint64_t> frames = Walk(0x100);
  ASSERT_EQ(frames.size(), static_cast<size_t>(kMaxSiteFrames));
  EXPECT_EQ(frames[0], kRip);
  EXPECT_EQ(frames[kMaxSiteFrames - 1], 0x1000u + kMaxSiteFrames - 2);
  EXPECT_THAT(Walk(0x100, 1), ElementsAre(kRip));
}

TEST_F(FrameWalkTest, EmptyRamGivesTheRipAlone) {
  GuestMemory empty{std::span<uint8_t>()};
  std::array<uint64_t, 4> out{};
  EXPECT_EQ(WalkFrames(empty, kRip, 0x100, out), 1);
  EXPECT_EQ(out[0], kRip);
}

}  // namespace
}  // namespace frame_walk_test
}  // namespace minivmm
