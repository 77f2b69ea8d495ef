// The wasted-exit analysis finds what the seed patches fixed
// (docs/wasted-exits.md): for each seed, the exits its optimized variant
// removes are exactly the wasted exits of its kind that disappear, and no
// more than the naive variant's wasted exits of that kind. Both sides are
// counted by the VMM in separate runs: the removal by the ordinary per-cause
// counts, the waste by the analysis, which knows nothing of the guest's code.
#include "gtest/gtest.h"
#include "minivmm_abi/hypercall.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
namespace {

struct SeedCase {
  std::string workload;
  std::string op;  // the seed's pvops op
  Cause cause;     // the exits it removes
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
  EXPECT_EQ(removed, Wasted(naive, c.cause).exits - Wasted(optimized, c.cause).exits);
  EXPECT_LE(removed, Wasted(naive, c.cause).exits);
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
    ::testing::Values(SeedCase{"ctx,tls=same", "tls", Cause::kDescriptorUpdate},
                      SeedCase{"pipe,tls=same", "tls", Cause::kDescriptorUpdate},
                      SeedCase{"ctx", "fpu_switch", Cause::kCr0Write},
                      SeedCase{"fpu", "fpu_switch", Cause::kCr0Write},
                      SeedCase{"ctx", "irq_restore", Cause::kIfClear},
                      SeedCase{"irq", "irq_restore", Cause::kIfClear}),
    [](const ::testing::TestParamInfo<SeedCase>& info) {
      std::string s = info.param.workload + "_" + info.param.op;
      for (char& ch : s)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return s;
    });

}  // namespace
}  // namespace minivmm::testing
