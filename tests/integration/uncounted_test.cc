// The uncounted kernel (guest/kernel/percpu.h): the built-in guest with all
// of its event and hypercall counting compiled out, which `minivmm bench`
// times. Counting must be all that differs: for every seed workload and
// variant it makes exactly the exits the counted kernel makes, by exit
// reason, hypercall and cause, wasted ones included, and it reports no
// counter at all (not measured, rather than zero).
#include <string>

#include "gtest/gtest.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
namespace {

std::string UncountedGuest() { return UncountedGuestKernelPath(BuiltinGuest()); }

struct SeedRun {
  std::string workload;
  std::string pvops;
};

std::string SeedRunName(const SeedRun& c) {
  std::string s = c.workload + "_" + c.pvops;
  for (char& ch : s)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

void PrintTo(const SeedRun& c, std::ostream* os) { *os << SeedRunName(c); }

class UncountedKernelTest : public ::testing::TestWithParam<SeedRun> {};

TEST_P(UncountedKernelTest, MakesTheCountedKernelsExitsAndReportsNoCounter) {
  REQUIRE_KVM();
  const SeedRun& c = GetParam();
  const std::string cmdline = "backend=pv pvops=" + c.pvops + " workload=" + c.workload;
  GuestRun counted = RunGuest(BuiltinGuest(), cmdline, absl::Seconds(60), 0, /*waste=*/true);
  GuestRun uncounted = RunGuest(UncountedGuest(), cmdline, absl::Seconds(60), 0, /*waste=*/true);
  for (const GuestRun* run : {&counted, &uncounted}) {
    ASSERT_EQ(run->result.reason, StopReason::kGuestShutdown) << run->result.detail << run->console;
    ASSERT_EQ(run->result.exit_code, 0) << run->console;
    EXPECT_EQ(run->Report("check.failed"), 0u);
  }
  EXPECT_EQ(counted.reports["kernel.counters"], "1");
  EXPECT_EQ(uncounted.reports["kernel.counters"], "0");

  const ExitStats& a = counted.result.stats;
  const ExitStats& b = uncounted.result.stats;
  uint64_t exits = 0;
  for (uint64_t n : a.by_reason) exits += n;
  ASSERT_GT(exits, 0u);
  EXPECT_EQ(a.by_reason, b.by_reason);
  EXPECT_EQ(a.hc_exits, b.hc_exits);
  EXPECT_EQ(a.hc_ops, b.hc_ops);
  EXPECT_EQ(a.hc_errors, b.hc_errors);
  for (int i = 0; i < static_cast<int>(Cause::kCount); ++i) {
    const std::string cause(CauseName(static_cast<Cause>(i)));
    EXPECT_EQ(a.causes[i].ops, b.causes[i].ops) << cause;
    EXPECT_EQ(a.causes[i].exits, b.causes[i].exits) << cause;
    EXPECT_EQ(a.wasted_by_cause[i].exits, b.wasted_by_cause[i].exits) << cause;
  }

  // The counted kernel's counters, and none of them from the uncounted one:
  // no kernel.<counter>, no <workload>.<counter> delta, no hypercall count.
  const std::string w = c.workload.substr(0, c.workload.find(','));
  for (const char* counter : {"switches", "desc_updates", "cr0_writes", "irq_restores_if_clear",
                              "multicalls", "pte_flags_calls", "hc_exits"}) {
    EXPECT_TRUE(counted.reports.contains(std::string("kernel.") + counter) ||
                counted.reports.contains(w + "." + counter))
        << counter;
    EXPECT_FALSE(uncounted.reports.contains(std::string("kernel.") + counter)) << counter;
    EXPECT_FALSE(uncounted.reports.contains(w + "." + counter)) << counter;
  }
  for (const auto& [key, value] : uncounted.reports) {
    EXPECT_EQ(key.find(".hc."), std::string::npos) << key;
    EXPECT_EQ(key.find(".hc_exits."), std::string::npos) << key;
  }
}

// The seed workloads as `minivmm bench` times them, naive, optimized and
// Xen's baseline, plus the patched pte_flags call sites.
INSTANTIATE_TEST_SUITE_P(
    SeedWorkloads, UncountedKernelTest,
    ::testing::Values(SeedRun{"ctx,tls=same", "naive"}, SeedRun{"ctx,tls=same", "optimized"},
                      SeedRun{"ctx,tls=same", "xen"}, SeedRun{"pipe,tls=same", "naive"},
                      SeedRun{"pipe,tls=same", "optimized"}, SeedRun{"fpu", "naive"},
                      SeedRun{"fpu", "optimized"}, SeedRun{"irq", "naive"},
                      SeedRun{"irq", "optimized"}, SeedRun{"cpa", "naive"},
                      SeedRun{"cpa", "optimized"}, SeedRun{"cpa", "naive,pte_flags:patched"}),
    [](const ::testing::TestParamInfo<SeedRun>& info) { return SeedRunName(info.param); });

// A workload that checks its hypercalls against the kernel's counts has
// nothing to check them against: the uncounted kernel refuses it, with the
// guest's usage status and one line saying why.
TEST(UncountedKernelRefusalTest, AWorkloadThatChecksTheKernelsCountsIsRefused) {
  REQUIRE_KVM();
  for (const char* workload : {"hcall", "hostile"}) {
    GuestRun run = RunGuest(UncountedGuest(), std::string("workload=") + workload);
    ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
    EXPECT_EQ(run.result.exit_code, 2) << workload;  // the guest's kExitBadCmdline
    EXPECT_NE(run.console.find(std::string("workload=") + workload +
                               " checks the kernel's counts (not in the uncounted kernel)"),
              std::string::npos)
        << run.console;
  }
}

}  // namespace
}  // namespace minivmm::testing
