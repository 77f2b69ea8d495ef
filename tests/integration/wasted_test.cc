// The wasted-exit analysis finds what the seed patches fixed
// (docs/wasted-exits.md): for each seed, the exits its optimized variant
// removes are exactly the wasted exits of its kind that disappear, and no
// more than the naive variant's wasted exits of that kind; for the TLS
// shadow and the stts/clts pair, over the whole run (boot included), they
// are all of the naive variant's wasted exits of that kind, and the
// optimized variant has none left. The removal is counted twice, by the VMM's
// per-cause counts and by the guest's own counters; the waste by the
// analysis, which knows nothing of the guest's code.
#include "gtest/gtest.h"
#include "minivmm_abi/hypercall.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
namespace {

// The guest's own count of the operations a seed removes from a run
// (batch is off: each one its own exit).
using GuestRemoved = uint64_t (*)(const GuestRun& naive, const GuestRun& optimized);

uint64_t DescUpdatesRemoved(const GuestRun& naive, const GuestRun& optimized) {
  return naive.Report("kernel.desc_updates") - optimized.Report("kernel.desc_updates");
}
uint64_t Cr0WritesRemoved(const GuestRun& naive, const GuestRun& optimized) {
  return naive.Report("kernel.cr0_writes") - optimized.Report("kernel.cr0_writes");
}
// Every restore that found IF clear: naive's set_if(0), optimized's nothing.
uint64_t RestoresIfClear(const GuestRun& naive, const GuestRun&) {
  return naive.Report("kernel.irq_restores_if_clear");
}

struct SeedCase {
  std::string workload;
  std::string op;  // the seed's pvops op
  Cause cause;     // the exits it removes
  GuestRemoved guest_removed;
  // The seed removes every wasted exit of its kind in the whole run.
  bool removes_all_waste;
};

void PrintTo(const SeedCase& c, std::ostream* os) { *os << c.workload << " " << c.op; }

GuestRun RunPv(const std::string& workload, const std::string& pvops, bool analyse) {
  GuestRun run = RunGuest(BuiltinGuest(), "backend=pv pvops=" + pvops + " workload=" + workload,
                          absl::Seconds(120), /*timer_hz=*/0, analyse);
  EXPECT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  EXPECT_EQ(run.Report("check.failed"), 0u);
  return run;
}

const CauseCount& Counted(const GuestRun& run, Cause cause) {
  return run.result.stats.causes[static_cast<int>(cause)];
}
const CauseCount& Wasted(const GuestRun& run, Cause cause) {
  return run.result.stats.wasted_by_cause[static_cast<int>(cause)];
}

class WastedSeedTest : public ::testing::TestWithParam<SeedCase> {};

TEST_P(WastedSeedTest, TheSeedRemovesExactlyTheWastedExitsOfItsKind) {
  REQUIRE_KVM();
  const SeedCase& c = GetParam();
  const GuestRun naive = RunPv(c.workload, "naive", /*analyse=*/true);
  const GuestRun optimized = RunPv(c.workload, "naive," + c.op + ":optimized", /*analyse=*/true);
  ASSERT_TRUE(naive.result.stats.waste_analysed);

  const uint64_t removed = Counted(naive, c.cause).exits - Counted(optimized, c.cause).exits;
  EXPECT_GT(removed, 0u) << "the seed removes nothing here";
  EXPECT_EQ(removed, c.guest_removed(naive, optimized));
  EXPECT_EQ(removed, Wasted(naive, c.cause).exits - Wasted(optimized, c.cause).exits);
  EXPECT_LE(removed, Wasted(naive, c.cause).exits);
  if (c.removes_all_waste) {
    // Whole run: the boot's TLS writes and TS changes are judged too.
    EXPECT_EQ(Wasted(naive, c.cause).exits, removed);
    EXPECT_EQ(Wasted(naive, c.cause).ops,
              Counted(naive, c.cause).ops - Counted(optimized, c.cause).ops);
    EXPECT_EQ(Wasted(optimized, c.cause).ops, 0u);
    EXPECT_EQ(Wasted(optimized, c.cause).exits, 0u);
  }
  // Wasted operations of a cause are among its operations.
  for (const GuestRun* run : {&naive, &optimized}) {
    for (int i = 0; i < static_cast<int>(Cause::kCount); ++i) {
      EXPECT_LE(run->result.stats.wasted_by_cause[i].ops, run->result.stats.causes[i].ops);
      EXPECT_LE(run->result.stats.wasted_by_cause[i].exits, run->result.stats.causes[i].exits);
    }
  }
}

TEST_P(WastedSeedTest, TheAnalysisChangesNoCount) {
  REQUIRE_KVM();
  const SeedCase& c = GetParam();
  const GuestRun with = RunPv(c.workload, "naive", /*analyse=*/true);
  const GuestRun without = RunPv(c.workload, "naive", /*analyse=*/false);
  EXPECT_FALSE(without.result.stats.waste_analysed);
  for (int i = 0; i < static_cast<int>(Cause::kCount); ++i) {
    EXPECT_EQ(with.result.stats.causes[i].ops, without.result.stats.causes[i].ops) << i;
    EXPECT_EQ(with.result.stats.causes[i].exits, without.result.stats.causes[i].exits) << i;
    EXPECT_EQ(without.result.stats.wasted_by_cause[i].exits, 0u);
  }
  EXPECT_EQ(with.result.stats.hc_exits, without.result.stats.hc_exits);
}

INSTANTIATE_TEST_SUITE_P(
    Seeds, WastedSeedTest,
    ::testing::Values(
        SeedCase{"ctx,tls=same", "tls", Cause::kDescriptorUpdate, DescUpdatesRemoved, true},
        SeedCase{"pipe,tls=same", "tls", Cause::kDescriptorUpdate, DescUpdatesRemoved, true},
        SeedCase{"ctx,tls=same", "fpu_switch", Cause::kCr0Write, Cr0WritesRemoved, true},
        SeedCase{"ctx", "fpu_switch", Cause::kCr0Write, Cr0WritesRemoved, true},
        SeedCase{"fpu", "fpu_switch", Cause::kCr0Write, Cr0WritesRemoved, true},
        // IF clear keeps waste the seed does not touch (nested irqsave with
        // IF already clear, disables that cancel an unused enable).
        SeedCase{"ctx", "irq_restore", Cause::kIfClear, RestoresIfClear, false},
        SeedCase{"irq", "irq_restore", Cause::kIfClear, RestoresIfClear, false}),
    [](const ::testing::TestParamInfo<SeedCase>& info) {
      std::string s = info.param.workload + "_" + info.param.op;
      for (char& ch : s)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return s;
    });

}  // namespace
}  // namespace minivmm::testing
