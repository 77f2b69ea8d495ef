// The guest calls every hypercall with good and bad arguments (workload=hcall)
// and attacks the VMM with every kind of bad value (workload=hostile). The
// guest checks each return value itself against the documented result or
// errno; the VMM's per-hypercall ops, exits and errors must equal the
// guest's own counts, and the VMM must keep running.
#include "gtest/gtest.h"
#include "minivmm_abi/hypercall.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
namespace {

void ExpectVmmCountsEqualGuestCounts(const GuestRun& run) {
  for (const HcName& hc : kAbiHypercalls) {
    const std::string n = hc.name;
    EXPECT_EQ(run.result.stats.hc_ops[hc.nr], run.Report("kernel.hc." + n)) << n;
    EXPECT_EQ(run.result.stats.hc_exits[hc.nr], run.Report("kernel.hc_exits." + n)) << n;
    EXPECT_EQ(run.result.stats.hc_errors[hc.nr], run.Report("kernel.hc_errors." + n)) << n;
  }
  EXPECT_EQ(run.result.stats.hc_bad_number, run.Report("kernel.hc_bad_number"));
}

class HostileGuestTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HostileGuestTest, EveryHypercallGetsItsDocumentedAnswer) {
  REQUIRE_KVM();
  GuestRun run = RunGuest(BuiltinGuest(), "backend=" + GetParam() + " workload=hcall");
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  EXPECT_EQ(run.result.exit_code, 0) << run.console;
  EXPECT_EQ(run.Report("check.failed"), 0u);
  EXPECT_GT(run.Report("hcall.checks"), 50u);
  ExpectVmmCountsEqualGuestCounts(run);
  // Every hypercall of the ABI was exercised, and some of each failed on
  // purpose except those that cannot fail in a way the guest survives.
  for (const HcName& hc : kAbiHypercalls) EXPECT_GT(run.result.stats.hc_ops[hc.nr], 0u) << hc.name;
  // The sched_op(block) probe returns with the timer's interrupt held back:
  // with the shared flag, by the mask, so the unmask that follows finds it
  // pending and forces it in (what safe_halt does); without, set_if(1) lets
  // it in. Either way it is taken exactly once.
  EXPECT_EQ(run.result.stats.timer_injections, run.Report("kernel.timer_irqs"));
  EXPECT_GE(run.Report("kernel.timer_irqs"), 1u);
  if (run.reports["config.pvops.irq"] == "shared") {
    EXPECT_GE(run.Report("kernel.irq_unmasks_pending"), 1u);
    EXPECT_EQ(run.HypercallExits(MVMM_HC_force_evtchn_callback),
              run.Report("kernel.irq_unmasks_pending") + 1);  // + the probe's own call
  }
}

TEST_P(HostileGuestTest, HostileGuestCannotHurtTheVmm) {
  REQUIRE_KVM();
  GuestRun run = RunGuest(BuiltinGuest(), "backend=" + GetParam() + " workload=hostile");
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  EXPECT_EQ(run.result.exit_code, 0) << run.console;
  EXPECT_EQ(run.Report("hostile.failures"), 0u);
  EXPECT_GT(run.Report("hostile.checks"), 200u);
  ExpectVmmCountsEqualGuestCounts(run);
  // Bad stores into the read-only GDT page: every one refused, none applied
  // beyond the kernel's own descriptor updates.
  EXPECT_EQ(run.result.stats.gdt_stores_rejected, run.Report("hostile.gdt_stores_rejected"));
  EXPECT_GT(run.result.stats.gdt_stores_rejected, 0u);
  if (GetParam() == "native") {
    EXPECT_EQ(run.result.stats.gdt_stores_applied, run.Report("kernel.desc_updates"));
  }
  // Huge console writes are refused or bounded: the console tail stays small.
  EXPECT_LE(run.result.console_tail.size(), 21u);
  // The bad numbers were counted, not crashed on.
  EXPECT_GT(run.result.stats.hc_bad_number, 0u);
}

// The parameter is the backend, with the irq:shared preset as a third: its
// registered vcpu_info changes what vcpu_op and force_evtchn_callback answer.
INSTANTIATE_TEST_SUITE_P(Backends, HostileGuestTest,
                         ::testing::Values("pv", "native", "pv pvops=xen"));

}  // namespace
}  // namespace minivmm::testing
