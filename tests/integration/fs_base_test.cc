// The fs_base pv op (x86-64 TLS: a 64-bit FS base that __switch_to writes,
// through set_segment_base under pv): on ctx,fs=base the VMM's FS-base
// exits equal the guest's count of its writes and a closed form of the
// workload's parameters (tests/common/ctx_model.h, docs/exit-model.md
// "5. FS base on a switch"), for both variants and backends and with the
// base shared or not; every task reads its own block through %fs, so a
// write that did not reach the vCPU fails its self-check. With --wasted,
// the naive variant's writes of the base the vCPU already holds are
// same-value exits, exactly the ones the optimized variant removes.
#include <string>

#include "gtest/gtest.h"
#include "minivmm_abi/hypercall.h"
#include "tests/common/ctx_model.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
// A namespace of the file's own: the test binaries are unity builds.
namespace fs_base_test {
namespace {

constexpr uint64_t kTasks = 3;
constexpr uint64_t kRounds = 20;

struct FsCase {
  const char* backend;
  const char* variant;  // fs_base:<variant>
  const char* tls;      // same: one base for every task
};

std::string Name(const ::testing::TestParamInfo<FsCase>& info) {
  return std::string(info.param.backend) + "_" + info.param.variant + "_tls_" + info.param.tls;
}

const CauseCount& FsBase(const GuestRun& run) {
  return run.result.stats.causes[static_cast<int>(Cause::kFsBase)];
}

GuestRun RunCtx(const FsCase& c, bool wasted) {
  return RunGuest(BuiltinGuest(),
                  std::string("backend=") + c.backend + " pvops=naive,fs_base:" + c.variant +
                      " workload=ctx,fs=base,tls=" + c.tls + ",tasks=" + std::to_string(kTasks) +
                      ",rounds=" + std::to_string(kRounds),
                  absl::Seconds(60), 0, wasted);
}

class FsBaseTest : public ::testing::TestWithParam<FsCase> {};

TEST_P(FsBaseTest, WritesAreTheGuestsAndTheClosedForm) {
  REQUIRE_KVM();
  const FsCase& c = GetParam();
  GuestRun run = RunCtx(c, false);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  ASSERT_EQ(run.result.exit_code, 0) << run.console;
  EXPECT_EQ(run.Report("check.failed"), 0u);  // every task read its own block through %fs
  EXPECT_EQ(run.reports["config.pvops.fs_base"], c.variant);
  const bool naive = std::string(c.variant) == "naive";
  const bool shared = std::string(c.tls) == "same";
  const uint64_t writes = FsBaseWrites(naive, shared, kTasks, kRounds);
  EXPECT_EQ(run.Report("kernel.fs_base_loads"), writes);
  EXPECT_EQ(run.Report("ctx.fs_base_loads"), writes);
  if (std::string(c.backend) == "pv") {
    // One exit each: the write follows the %fs reload, outside the batch.
    EXPECT_EQ(FsBase(run).ops, writes);
    EXPECT_EQ(FsBase(run).exits, writes);
    EXPECT_EQ(run.HypercallExits(MVMM_HC_set_segment_base),
              run.Report("kernel.hc_exits.set_segment_base"));
    EXPECT_EQ(run.result.stats.hc_errors[MVMM_HC_set_segment_base], 0u);
  } else {
    // wrmsr(MSR_FS_BASE): no exit the VMM sees.
    EXPECT_EQ(FsBase(run).ops, 0u);
    EXPECT_EQ(run.HypercallOps(MVMM_HC_set_segment_base), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, FsBaseTest,
                         ::testing::Values(FsCase{"pv", "naive", "all"},
                                           FsCase{"pv", "optimized", "all"},
                                           FsCase{"pv", "naive", "same"},
                                           FsCase{"pv", "optimized", "same"},
                                           FsCase{"native", "naive", "same"},
                                           FsCase{"native", "optimized", "same"}),
                         Name);

// With one base for every task, naive writes it on each of the ring's
// switches and the vCPU already holds it on all but the first: those are
// same-value wasted exits, and optimized removes exactly them.
TEST(FsBaseWastedTest, TheNaiveVariantsRedundantWritesAreSameValueExits) {
  REQUIRE_KVM();
  GuestRun naive = RunCtx({"pv", "naive", "same"}, true);
  GuestRun optimized = RunCtx({"pv", "optimized", "same"}, true);
  for (const GuestRun* run : {&naive, &optimized}) {
    ASSERT_EQ(run->result.reason, StopReason::kGuestShutdown) << run->console;
    ASSERT_EQ(run->result.exit_code, 0) << run->console;
  }
  const int i = static_cast<int>(Cause::kFsBase);
  const uint64_t removed = FsBase(naive).exits - FsBase(optimized).exits;
  EXPECT_EQ(removed, CtxFsBaseSwitches(kTasks, kRounds) - 1);
  EXPECT_EQ(naive.result.stats.wasted_same_value_by_cause[i].exits, removed);
  EXPECT_EQ(naive.result.stats.wasted_by_cause[i].exits, removed);
  EXPECT_EQ(optimized.result.stats.wasted_by_cause[i].exits, 0u);
}

}  // namespace
}  // namespace fs_base_test
}  // namespace minivmm::testing
