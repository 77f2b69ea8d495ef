// Whole-VM tests of the per-vCPU timers with the tiny guest vcpu_timers.S:
// each secondary vCPU arms its own one-shot and periodic timer, blocks while
// vCPU 0 is halted for good, and counts the timer interrupts it takes. The
// VMM's per-vCPU timer_injections must equal each vCPU's own count.
#include <string>

#include "gtest/gtest.h"
#include "minivmm_abi/hypercall.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
namespace {

class VcpuTimerTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(VcpuTimerTest, EachSecondaryVcpuTakesExactlyItsOwnTimersInterrupts) {
  REQUIRE_KVM();
  const uint32_t cpus = GetParam();
  GuestRun run = RunGuest(TinyGuest("vcpu_timers"), "", absl::Seconds(60), /*timer_hz=*/0,
                          /*analyse_waste=*/false, cpus);
  const RunResult& r = run.result;
  ASSERT_EQ(r.reason, StopReason::kGuestShutdown) << r.detail;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stopped_by_vcpu, static_cast<int>(cpus - 1));
  ASSERT_EQ(r.per_vcpu.size(), cpus);

  // vCPU 0 armed nothing and halted with interrupts off.
  EXPECT_EQ(r.per_vcpu[0].timer_injections, 0u);
  EXPECT_EQ(r.per_vcpu[0].by_reason[static_cast<int>(ExitReason::kHlt)], 1u);
  EXPECT_EQ(r.per_vcpu[0].hc_ops[MVMM_HC_vcpu_op], 0u);
  EXPECT_TRUE(r.vcpu_stops[0].idle);

  uint64_t injected = 0;
  for (uint32_t cpu = 1; cpu < cpus; ++cpu) {
    SCOPED_TRACE(::testing::Message() << "vCPU " << cpu);
    const ExitStats& s = r.per_vcpu[cpu];
    const uint64_t taken = run.Report("vt.cpu" + std::to_string(cpu) + ".ticks");
    EXPECT_EQ(s.timer_injections, taken);
    EXPECT_GE(taken, 1u + 5u);  // the one-shot and at least 5 periodic ticks
    injected += s.timer_injections;
    EXPECT_EQ(s.hc_ops[MVMM_HC_set_timer_op], 1u);
    // set_periodic_timer for vCPU 0 (refused), for itself, then stop.
    EXPECT_EQ(s.hc_ops[MVMM_HC_vcpu_op], 3u);
    EXPECT_EQ(s.hc_errors[MVMM_HC_vcpu_op], 1u);
    EXPECT_EQ(s.hc_ops[MVMM_HC_report], 1u);
    // Each block was followed by one set_if(1), which let in at least one
    // interrupt; the last vCPU also shut down.
    const uint64_t waits = s.hc_ops[MVMM_HC_set_if];
    EXPECT_EQ(s.hc_ops[MVMM_HC_sched_op], waits + (cpu == cpus - 1 ? 1 : 0));
    EXPECT_GE(s.timer_injections, waits);
    EXPECT_EQ(s.ipi_injections, 0u);
  }
  EXPECT_EQ(r.stats.timer_injections, injected);
}

INSTANTIATE_TEST_SUITE_P(Cpus, VcpuTimerTest, ::testing::Values(2u, 4u));

}  // namespace
}  // namespace minivmm::testing
