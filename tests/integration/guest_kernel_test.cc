// The guest kernel's own counters for the ctx/pipe ring: exact,
// explained values under several task counts, both backends, timer off and
// on. The ring: T user tasks pass a token through T pipes for N rounds; each
// task reads from its pipe (blocking until its left neighbour writes), then
// writes to its right neighbour's pipe.
#include "gtest/gtest.h"
#include "tests/common/fpu_model.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
namespace {

struct RingCase {
  std::string workload;  // ctx or pipe
  int tasks;
  int rounds;
  std::string backend;
  uint32_t timer_hz;
};

void PrintTo(const RingCase& c, std::ostream* os) {
  *os << c.workload << " T=" << c.tasks << " N=" << c.rounds << " " << c.backend
      << " hz=" << c.timer_hz;
}

class GuestRingTest : public ::testing::TestWithParam<RingCase> {};

TEST_P(GuestRingTest, CountersFollowTheRingsShape) {
  REQUIRE_KVM();
  const RingCase& c = GetParam();
  const uint64_t t = c.tasks, n = c.rounds;
  const std::string w = c.workload;
  GuestRun run = RunGuest(BuiltinGuest(),
                          "backend=" + c.backend + " pvops=naive workload=" + w +
                              (w == "ctx" ? ",tasks=" + std::to_string(t) : "") +
                              ",rounds=" + std::to_string(n) + ",fpu=all",
                          absl::Seconds(60), c.timer_hz);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  ASSERT_EQ(run.result.exit_code, 0) << run.console;
  EXPECT_EQ(run.Report("check.failed"), 0u);
  EXPECT_EQ(run.Report("check." + w + ".failed"), 0u);
  // Every task checks its TLS (through %fs/%gs) and its FPU/SSE registers
  // after every read, so one check per pass at least.
  EXPECT_GE(run.Report("check." + w + ".passed"), t * n);
  EXPECT_EQ(run.Report(w + ".passes"), t * n);

  // Switches: init -> task 0 (1), then in every round each of the T tasks
  // blocks on its empty pipe once and the scheduler switches to the task its
  // write woke (T per round), and the last task's exit switches back to
  // init (1). Timer interrupts without preemption add none.
  EXPECT_EQ(run.Report(w + ".switches"), t * n + 2);
  // System calls: a read and a write per pass (2 T N), one exit per task
  // (T), and five deliberately bad calls by task 0 that must get errors (5).
  EXPECT_EQ(run.Report(w + ".syscalls"), 2 * t * n + t + 5);
  // Wake-ups: every write wakes the blocked reader, except the writes of the
  // last round that find no reader waiting, plus the two joins.
  EXPECT_EQ(run.Report(w + ".wakeups"), t * (n - 1) + 2);
  // FPU (fpu=all, a ring-3 FPU user in every slice): where the host does not
  // deliver ring-3 #NM, every switch into a task preloads (all but the switch
  // back to init) and T N of them leave a task that owned the FPU; where it
  // does, each task traps in its first six slices and is preloaded after
  // (tests/common/fpu_model.h). Either way every slice starts with exactly
  // one of the two.
  const FpuEvents ring = RingFpuEvents(t, n, run.Report("kernel.ring3_nm") != 0, /*eager=*/false);
  EXPECT_EQ(run.Report(w + ".fpu_preloads"), ring.preloads);
  EXPECT_EQ(run.Report(w + ".fpu_owner_preloads"), ring.owner_preloads);
  EXPECT_EQ(run.Report(w + ".nm_traps"), ring.nm_traps);
  EXPECT_EQ(run.Report(w + ".fpu_preloads") + run.Report(w + ".nm_traps"),
            run.Report(w + ".switches") - 1);
  // Naive stts/clts: an stts leaving every slice and a clts entering it
  // (preload or #NM), on every host.
  EXPECT_EQ(run.Report(w + ".cr0_writes"), 2 * t * n + 2);
  // Naive TLS: three descriptors per switch.
  EXPECT_EQ(run.Report(w + ".desc_updates"), 3 * run.Report(w + ".switches"));
  // Processes (the default mm=process): every switch into a task changes
  // the address space; the switch back to init (a kernel thread) keeps it.
  EXPECT_EQ(run.Report(w + ".address_spaces"), t);
  EXPECT_EQ(run.Report(w + ".cr3_writes"), run.Report(w + ".switches") - 1);
  EXPECT_EQ(run.Report(w + ".cr3_writes"), t * n + 1);
  if (c.timer_hz == 0) {
    EXPECT_EQ(run.Report(w + ".timer_irqs"), 0u);
  }
  // How many ticks land depends on the host's speed, but every interrupt the
  // VMM injected was taken by the guest exactly once, and no other.
  EXPECT_EQ(run.result.stats.timer_injections, run.Report("kernel.timer_irqs"));
  EXPECT_EQ(run.Report(w + ".preemptions"), 0u);
}

std::vector<RingCase> Cases() {
  std::vector<RingCase> cases;
  for (const char* b : {"pv", "native"}) {
    for (int t : {2, 3, 5}) cases.push_back({"ctx", t, 4, b, 0});
    cases.push_back({"pipe", 2, 4, b, 0});  // lat_pipe: always two tasks
  }
  for (const char* b : {"pv", "native"}) cases.push_back({"ctx", 3, 4, b, 1000});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, GuestRingTest, ::testing::ValuesIn(Cases()));

// workload=exitcost (the bench's exit-cost model): each timed call, bare or
// through the counted wrapper, is one console_io exit, by the VMM's count
// and by the guest's (which counts the bare loop's calls after it).
TEST(GuestKernelTest, ExitCostCallsAreOneExitEach) {
  REQUIRE_KVM();
  constexpr uint64_t kLoops = 300;
  for (const char* backend : {"pv", "native"}) {
    GuestRun run =
        RunGuest(BuiltinGuest(), std::string("backend=") + backend +
                                     " workload=exitcost,loops=" + std::to_string(kLoops));
    ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
    EXPECT_EQ(run.Report("check.failed"), 0u);
    EXPECT_EQ(run.Report("check.exitcost.passed"), 2 * kLoops);
    EXPECT_EQ(run.Report("exitcost.calls"), 2 * kLoops);
    // Nothing else during the two loops: the guest's count, and the
    // closed form (two loops of kLoops calls).
    EXPECT_EQ(run.Report("exitcost.hc_exits"), 2 * kLoops);
    EXPECT_EQ(run.Report("exitcost.hc_ops"), 2 * kLoops);
    EXPECT_EQ(run.HypercallExits(MVMM_HC_console_io), run.Report("kernel.hc_exits.console_io"));
    EXPECT_GE(run.HypercallExits(MVMM_HC_console_io), 2 * kLoops);
    EXPECT_GT(run.Report("exitcost.tsc_per_op"), 0u);
    EXPECT_GT(run.Report("exitcost.wrapper_tsc_per_op"), 0u);
  }
}

TEST(GuestKernelTest, PreemptionKeepsEveryTaskCorrect) {
  REQUIRE_KVM();
  // With preemption the interleaving depends on when ticks land, so only
  // the self-checks and lower bounds are exact.
  for (const char* b : {"pv", "native"}) {
    GuestRun run = RunGuest(
        BuiltinGuest(), std::string("backend=") + b + " workload=ctx,tasks=3,rounds=5,preempt=1",
        absl::Seconds(60), 1000);
    ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
    EXPECT_EQ(run.result.exit_code, 0) << run.console;
    EXPECT_EQ(run.Report("check.failed"), 0u);
    EXPECT_EQ(run.Report("ctx.passes"), 15u);
    EXPECT_GT(run.Report("ctx.timer_irqs"), 0u);
    EXPECT_EQ(run.result.stats.timer_injections, run.Report("kernel.timer_irqs"));
  }
}

TEST(GuestKernelTest, FpuThreadsTrapSixTimesThenPreload) {
  REQUIRE_KVM();
  // K kernel threads using SSE in ring 0, N slices each: the first six
  // slices of each thread trap (#NM, lazy), after which fpu_counter > 5 and
  // the state is preloaded on every switch into it.
  const uint64_t k = 3, n = 8;
  GuestRun run = RunGuest(BuiltinGuest(), "backend=pv pvops=naive workload=fpu,threads=3,rounds=8");
  ASSERT_EQ(run.result.exit_code, 0) << run.console;
  EXPECT_EQ(run.Report("fpu.switches"), k * n + k + 1);
  EXPECT_EQ(run.Report("fpu.nm_traps"), 6 * k);
  EXPECT_EQ(run.Report("fpu.fpu_preloads"), k * (n - 5));
  EXPECT_EQ(run.Report("fpu.fpu_owner_preloads"), k * (n - 5));
}

}  // namespace
}  // namespace minivmm::testing

namespace minivmm::testing {
namespace {

class TimerAccountingTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
};

TEST_P(TimerAccountingTest, EveryInjectedInterruptIsTakenExactlyOnce) {
  REQUIRE_KVM();
  const auto& [backend, workload] = GetParam();
  // With preemption at 1000 Hz a switch on kvm_pvm outlasts a tick; the
  // guest's time slice (guest/README.md "An interrupt") keeps the ring
  // moving, so ctx,preempt=1 takes about a second, not minutes.
  GuestRun run = RunGuest(BuiltinGuest(), "backend=" + backend + " workload=" + workload,
                          absl::Seconds(60), 1000);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  EXPECT_EQ(run.result.exit_code, 0) << run.console;
  EXPECT_EQ(run.Report("check.failed"), 0u);
  EXPECT_EQ(run.result.stats.timer_injections, run.Report("kernel.timer_irqs"));
}

INSTANTIATE_TEST_SUITE_P(Workloads, TimerAccountingTest,
                         ::testing::Combine(::testing::Values("pv", "native"),
                                            ::testing::Values("ctx,preempt=1", "pipe",
                                                              "irq,pending=1", "cpa", "fpu")),
                         [](const auto& info) {
                           std::string name =
                               std::get<0>(info.param) + "_" + std::get<1>(info.param);
                           for (char& c : name)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace minivmm::testing
