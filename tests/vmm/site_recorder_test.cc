#include "vmm/run/site_recorder.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "minivmm_abi/hypercall.h"
#include "vmm/core/waste.h"

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
    recorder_.Begin(IoOut{}, /*hypercall=*/true);
    waste_.BeginExit(sequence_, false);
    waste_.Op(MVMM_HC_fpu_taskswitch, Cause::kCr0Write, effect);
    stats_.CountCause(Cause::kCr0Write, 1, 1);
    waste_.EndExit();
    ASSERT_TRUE(recorder_.EndPending());
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
  PlainVcpuState vcpu_;  // RBP 0: no frames beyond the RIP
  SiteRecorder recorder_{memory_, stats_, vcpu_};
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
  recorder_.Begin(Hlt{}, /*hypercall=*/false);
  ASSERT_TRUE(recorder_.EndPending());
  recorder_.End(nullptr, 0);
  ASSERT_EQ(recorder_.sites().counts.size(), 1u);
  const ExitSite& site = recorder_.sites().counts.begin()->first;
  EXPECT_TRUE(site.user);
  EXPECT_EQ(site.depth, 1);
  EXPECT_EQ(site.frames[0], 0x400000u);
  EXPECT_EQ(site.cause, Cause::kCount);
  EXPECT_EQ(site.hypercall, -1);
}

// One exit as a test scripts it, and what the handlers counted for it.
struct ScriptedExit {
  uint64_t rip;
  uint64_t nr;       // EAX
  uint64_t rbp = 0;  // 0: the RIP alone
  uint8_t cpl = 0;
  std::optional<Cause> counted;  // the cause whose exits the exit moved, if any
  uint64_t rsi = 0;
  bool injection_before = false;  // an interrupt injected before the exit
};

// The sites a recorder makes of `script`, with repeats allowed or not (a run
// with no observer and no analysis allows them: RunLoop::LoopWith).
ExitSites SitesOf(const std::vector<ScriptedExit>& script, bool repeats) {
  std::vector<uint8_t> ram(0x1000);
  // The one frame at 0x800: saved RBP 0, a return address.
  const uint64_t ret = 0xffffffff81000300;
  std::memcpy(ram.data() + 0x808, &ret, sizeof ret);
  GuestMemory memory{ram};
  ExitStats stats;
  PlainVcpuState vcpu;
  SiteRecorder recorder{memory, stats, vcpu};
  recorder.AllowRepeats(repeats);
  for (const ScriptedExit& e : script) {
    if (e.injection_before) ++stats.timer_injections;
    vcpu.regs[static_cast<int>(Reg::kRip)] = e.rip;
    vcpu.regs[static_cast<int>(Reg::kRax)] = e.nr;
    vcpu.regs[static_cast<int>(Reg::kRbp)] = e.rbp;
    vcpu.regs[static_cast<int>(Reg::kRsi)] = e.rsi;
    vcpu.cpl = e.cpl;
    recorder.Begin(IoOut{}, /*hypercall=*/true);
    if (e.counted) stats.CountCause(*e.counted, 1, 1);
    if (recorder.EndPending()) recorder.End(nullptr, 0);
  }
  return recorder.sites();
}

TEST(SiteRecorderRepeatsTest, RepeatsMakeTheSitesThatDerivingEachExitMakes) {
  constexpr uint64_t kA = 0xffffffff81000100, kB = 0xffffffff81000200;
  constexpr Cause kDesc = Cause::kDescriptorUpdate;
  std::vector<ScriptedExit> script;
  // A loop of calls of no cause (console_io), then of one that has one.
  for (int i = 0; i < 5; ++i) script.push_back({kA, MVMM_HC_console_io});
  for (int i = 0; i < 5; ++i) script.push_back({kB, MVMM_HC_update_descriptor, 0, 0, kDesc});
  // The same call refused (no cause moved), then counted again.
  script.push_back({kB, MVMM_HC_update_descriptor});
  script.push_back({kB, MVMM_HC_update_descriptor, 0, 0, kDesc});
  // The same RIP and number from ring 3, and with a frame to walk.
  script.push_back({kB, MVMM_HC_update_descriptor, 0, 3});
  script.push_back({kB, MVMM_HC_update_descriptor, 0, 0, kDesc});
  script.push_back({kB, MVMM_HC_update_descriptor, 0x800, 0, kDesc});
  script.push_back({kB, MVMM_HC_update_descriptor, 0, 0, kDesc});
  // A run of lazy-mode calls with an interrupt in the middle (batchable).
  for (int i = 0; i < 4; ++i)
    script.push_back({kB, MVMM_HC_update_descriptor, 0, 0, kDesc, 0, /*injection_before=*/i == 2});
  // Upper bits of RAX are not the number; another number at the same RIP.
  script.push_back({kA, (1ull << 40) | MVMM_HC_console_io});
  script.push_back({kA, MVMM_HC_set_timer_op});
  script.push_back({kA, MVMM_HC_console_io});

  const ExitSites derived = SitesOf(script, /*repeats=*/false);
  const ExitSites repeated = SitesOf(script, /*repeats=*/true);
  ASSERT_EQ(repeated.counts.size(), derived.counts.size());
  uint64_t exits = 0;
  for (const auto& [site, count] : derived.counts) {
    const auto it = repeated.counts.find(site);
    ASSERT_NE(it, repeated.counts.end())
        << "a site only the derived run has, at " << site.frames[0];
    EXPECT_EQ(it->second.exits, count.exits) << site.frames[0];
    EXPECT_EQ(it->second.batchable, count.batchable) << site.frames[0];
    exits += count.exits;
  }
  EXPECT_EQ(exits, script.size());
  // And what the script made, counted by hand: the loop at kA, the upper
  // bits and the last call (7 exits at one site of no cause), the lazy
  // calls at kB in ring 0 with the RIP alone and a cause (5 + 1 + 1 + 1 + 4).
  ExitSite console;
  console.reason = ExitReason::kIo;
  console.hypercall = MVMM_HC_console_io;
  console.depth = 1;
  console.frames[0] = kA;
  EXPECT_EQ(repeated.counts.at(console).exits, 7u);
  ExitSite desc = console;
  desc.hypercall = MVMM_HC_update_descriptor;
  desc.cause = kDesc;
  desc.frames[0] = kB;
  EXPECT_EQ(repeated.counts.at(desc).exits, 12u);
}

}  // namespace
}  // namespace minivmm
