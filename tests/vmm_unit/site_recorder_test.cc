#include "vmm/run/site_recorder.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "hypercalls/waste.h"
#include "minivmm_abi/hypercall.h"

namespace minivmm {
namespace {

constexpr int kCancelled = static_cast<int>(WasteReason::kCancelledPair);

// Exits fed to a SiteRecorder the way the run loop brackets them, with a
// WasteLog and the counts the handlers would make.
class SiteRecorderTest : public ::testing::Test {
 protected:
  // One fpu_taskswitch exit at RIP `rip` whose CR0 operation had `effect`.
  void Cr0Exit(uint64_t rip, OpEffect effect) {
    vcpu_.regs[static_cast<int>(Reg::kRip)] = rip;
    vcpu_.regs[static_cast<int>(Reg::kRax)] = MVMM_HC_fpu_taskswitch;
    recorder_.Begin(IoOut{}, vcpu_, /*hypercall=*/true);
    waste_.BeginExit(sequence_, false);
    waste_.Op(MVMM_HC_fpu_taskswitch, Cause::kCr0Write, effect);
    stats_.CountCause(Cause::kCr0Write, 1, 1);
    waste_.EndExit();
    recorder_.End(&waste_, sequence_++);
  }
  const SiteCount& At(uint64_t rip) {
    ExitSite site;
    site.reason = ExitReason::kIo;
    site.cause = Cause::kCr0Write;
    site.hypercall = MVMM_HC_fpu_taskswitch;
    site.depth = 1;
    site.frames[0] = rip;
    return recorder_.sites().counts.at(site);
  }

  std::vector<uint8_t> ram_ = std::vector<uint8_t>(0x1000);
  GuestMemory memory_{ram_};
  ExitStats stats_;
  WasteLog waste_{stats_};
  SiteRecorder recorder_{memory_, stats_};
  PlainVcpuState vcpu_;  // RBP 0: no frames beyond the RIP
  uint64_t sequence_ = 0;
};

TEST_F(SiteRecorderTest, ACancelledPairsFirstHalfIsWastedAtItsOwnSite) {
  Cr0Exit(0x1000, OpEffect::kTsSet);
  Cr0Exit(0x2000, OpEffect::kTsClear);
  EXPECT_EQ(At(0x1000).exits, 1u);
  EXPECT_EQ(At(0x1000).wasted[kCancelled], 1u);
  EXPECT_EQ(At(0x2000).wasted[kCancelled], 1u);
  EXPECT_EQ(recorder_.sites().wasted_unplaced, 0u);
  EXPECT_EQ(stats_.wasted_by_cause[static_cast<int>(Cause::kCr0Write)].exits, 2u);
}

TEST_F(SiteRecorderTest, AFirstHalfBeyondTheHistoryIsUnplaced) {
  Cr0Exit(0x1000, OpEffect::kTsSet);
  // kSiteHistory CR0 writes that change other bits: candidates, no verdict.
  for (int i = 0; i < kSiteHistory; ++i) Cr0Exit(0x3000, OpEffect::kChanged);
  Cr0Exit(0x2000, OpEffect::kTsClear);
  EXPECT_EQ(At(0x1000).wasted[kCancelled], 0u);
  EXPECT_EQ(At(0x2000).wasted[kCancelled], 1u);
  EXPECT_EQ(recorder_.sites().wasted_unplaced, 1u);
  EXPECT_EQ(At(0x3000).exits, static_cast<uint64_t>(kSiteHistory));
}

TEST_F(SiteRecorderTest, ARing3ExitIsItsRipAlone) {
  // A valid frame at RBP that a kernel exit would follow.
  const std::array<uint64_t, 2> frame = {0, 0xabc};
  ASSERT_TRUE(memory_.WriteObj(GuestAddress(0x100), frame));
  vcpu_.regs[static_cast<int>(Reg::kRbp)] = 0x100;
  vcpu_.cpl = 3;
  vcpu_.regs[static_cast<int>(Reg::kRip)] = 0x400000;
  recorder_.Begin(Hlt{}, vcpu_, /*hypercall=*/false);
  recorder_.End(nullptr, 0);
  ASSERT_EQ(recorder_.sites().counts.size(), 1u);
  const ExitSite& site = recorder_.sites().counts.begin()->first;
  EXPECT_TRUE(site.user);
  EXPECT_EQ(site.depth, 1);
  EXPECT_EQ(site.frames[0], 0x400000u);
  EXPECT_EQ(site.cause, Cause::kCount);
  EXPECT_EQ(site.hypercall, -1);
}

}  // namespace
}  // namespace minivmm
