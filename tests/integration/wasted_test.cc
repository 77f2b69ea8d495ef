// The wasted-exit analysis finds what the seed patches fixed
// (docs/wasted-exits.md "The seeds, found automatically"): for each seed, the
// exits its optimized variant removes are exactly the wasted exits of its
// kind that disappear, on the verdicts that hold in the run's conditions.
// For the TLS shadow and the stts/clts pair (timer off), over the whole run
// (boot included), they are all of the naive variant's wasted exits of that
// kind, and the optimized variant has none left. For the conditional
// restore they are the same-value IF-clear exits that disappear, timer off
// and on: the restores that found IF clear were writes of 0 over 0, whatever
// the ticks do; which enable/disable pairs are cancelled depends on when
// ticks land (and with the timer off every IF exit is wasted by definition,
// so comparing all of them would say nothing). The removal is counted
// twice, by the VMM's per-cause counts and by the guest's own counters of
// the calls (which the guest keeps in the wrappers that make them: the same
// calls seen from the guest's side, not an independent measure); the waste
// by the analysis, from the state before and after each operation.
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
// The guest's set_if(0) calls are its disables and, under naive, those
// restores; with the timer on the two runs take different ticks, whose
// handlers disable (and restore) too, so each run's own disables count.
uint64_t IfClearCallsRemoved(const GuestRun& naive, const GuestRun& optimized) {
  return naive.Report("kernel.irq_disables") + naive.Report("kernel.irq_restores_if_clear") -
         optimized.Report("kernel.irq_disables");
}

// Which verdicts the identity holds on.
enum class Verdicts {
  kAll,        // every wasted exit of the kind, and the optimized run has none left
  kSameValue,  // the same-value ones (what a tick cannot change)
};

struct SeedCase {
  std::string workload;
  std::string op;  // the seed's pvops op
  Cause cause;     // the exits it removes
  GuestRemoved guest_removed;
  Verdicts verdicts;
  uint32_t timer_hz = 0;
};

void PrintTo(const SeedCase& c, std::ostream* os) {
  *os << c.workload << " " << c.op << " timer " << c.timer_hz;
}

GuestRun RunPv(const std::string& workload, const std::string& pvops, bool analyse,
               uint32_t timer_hz) {
  GuestRun run = RunGuest(BuiltinGuest(), "backend=pv pvops=" + pvops + " workload=" + workload,
                          absl::Seconds(120), timer_hz, analyse);
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
const CauseCount& SameValue(const GuestRun& run, Cause cause) {
  return run.result.stats.wasted_same_value_by_cause[static_cast<int>(cause)];
}

class WastedSeedTest : public ::testing::TestWithParam<SeedCase> {};

TEST_P(WastedSeedTest, TheSeedRemovesExactlyTheWastedExitsOfItsKind) {
  REQUIRE_KVM();
  const SeedCase& c = GetParam();
  const GuestRun naive = RunPv(c.workload, "naive", /*analyse=*/true, c.timer_hz);
  const GuestRun optimized =
      RunPv(c.workload, "naive," + c.op + ":optimized", /*analyse=*/true, c.timer_hz);
  ASSERT_TRUE(naive.result.stats.waste_analysed);
  if (c.timer_hz != 0) {
    EXPECT_GT(naive.result.stats.timer_injections, 0u) << "no tick landed: the timer-on premise";
  }

  const uint64_t removed = Counted(naive, c.cause).exits - Counted(optimized, c.cause).exits;
  EXPECT_GT(removed, 0u) << "the seed removes nothing here";
  EXPECT_EQ(removed, c.guest_removed(naive, optimized));
  if (c.verdicts == Verdicts::kSameValue) {
    // Every removed call was one operation and one exit, a write of the
    // value already there.
    EXPECT_EQ(removed, SameValue(naive, c.cause).exits - SameValue(optimized, c.cause).exits);
    EXPECT_EQ(removed, SameValue(naive, c.cause).ops - SameValue(optimized, c.cause).ops);
    EXPECT_LE(removed, SameValue(naive, c.cause).exits);
  } else {
    EXPECT_EQ(removed, Wasted(naive, c.cause).exits - Wasted(optimized, c.cause).exits);
    EXPECT_LE(removed, Wasted(naive, c.cause).exits);
  }
  // Same-value verdicts are among the wasted ones.
  for (const GuestRun* run : {&naive, &optimized}) {
    for (int i = 0; i < static_cast<int>(Cause::kCount); ++i) {
      EXPECT_LE(run->result.stats.wasted_same_value_by_cause[i].ops,
                run->result.stats.wasted_by_cause[i].ops);
      EXPECT_LE(run->result.stats.wasted_same_value_by_cause[i].exits,
                run->result.stats.wasted_by_cause[i].exits);
    }
  }
  if (c.verdicts == Verdicts::kAll) {
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
  // Timer off: two runs of the same configuration then count the same.
  const GuestRun with = RunPv(c.workload, "naive", /*analyse=*/true, 0);
  const GuestRun without = RunPv(c.workload, "naive", /*analyse=*/false, 0);
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
        SeedCase{"ctx,tls=same", "tls", Cause::kDescriptorUpdate, DescUpdatesRemoved,
                 Verdicts::kAll},
        SeedCase{"pipe,tls=same", "tls", Cause::kDescriptorUpdate, DescUpdatesRemoved,
                 Verdicts::kAll},
        SeedCase{"ctx,tls=same", "fpu_switch", Cause::kCr0Write, Cr0WritesRemoved, Verdicts::kAll},
        SeedCase{"ctx", "fpu_switch", Cause::kCr0Write, Cr0WritesRemoved, Verdicts::kAll},
        SeedCase{"fpu", "fpu_switch", Cause::kCr0Write, Cr0WritesRemoved, Verdicts::kAll},
        // IF clear keeps waste the seed does not touch (nested irqsave with
        // IF already clear, disables that cancel an unused enable).
        SeedCase{"ctx", "irq_restore", Cause::kIfClear, IfClearCallsRemoved, Verdicts::kSameValue},
        SeedCase{"irq", "irq_restore", Cause::kIfClear, IfClearCallsRemoved, Verdicts::kSameValue},
        SeedCase{"ctx", "irq_restore", Cause::kIfClear, IfClearCallsRemoved, Verdicts::kSameValue,
                 1000},
        // Long enough for a few dozen ticks.
        SeedCase{"irq,loops=2000", "irq_restore", Cause::kIfClear, IfClearCallsRemoved,
                 Verdicts::kSameValue, 1000}),
    [](const ::testing::TestParamInfo<SeedCase>& info) {
      std::string s = info.param.workload + "_" + info.param.op +
                      (info.param.timer_hz != 0 ? "_hz" + std::to_string(info.param.timer_hz) : "");
      for (char& ch : s)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return s;
    });

}  // namespace
}  // namespace minivmm::testing
