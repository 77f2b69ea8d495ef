// Whole-VM tests of the contended spinlock (workload=lock, kernel/spinlock.h,
// docs/exit-model.md "SMP"). How often the lock is contended depends on
// timing, so the counts are not functions of N, I and L; what is asserted is
// what must hold in every run, exactly, per vCPU and in total:
// - identities: the VMM's lock_wait, lock_kick and yield exits (and ops) of
//   each vCPU equal that CPU's own count of the calls it made, its
//   lock_wakes_by_kick equals the CPU's count of waits that returned KICKED,
//   and every hypercall of each vCPU equals the CPU's own count;
// - bounds: a wake by a kick needs a kick (wakes <= kicks, in total); a
//   CPU kicks at most once per release (kicks <= acquisitions); a wait comes
//   after kSpinThreshold spins and a naive yield after kYieldEvery spins;
// - the variant's zeros: spinlock:naive makes no lock_wait or lock_kick,
//   spinlock:optimized no yield, yield:naive no directed yield;
// - one CPU: no contention, so no spin, wait, kick or yield at all;
// - several CPUs: contention, which the cases make certain with a long
//   critical section (kContendedCs), and under pv the slow path's
//   hypercalls (a wait or a yield), or the run tested nothing;
// - the guest's self-check: the shared counter is N·I.
#include <string>

#include "gtest/gtest.h"
#include "minivmm_abi/hypercall.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
// A namespace of the file's own: the test binaries are unity builds.
namespace lock_test {
namespace {

// Five times the workload's default (200): where the CPUs' threads share
// one host CPU (the nested kvm_amd's VM has one), each CPU's loop then lasts
// several scheduler slices, so a lock holder is preempted with the others
// waiting; at 200, a run under load now and then saw no contention at all.
constexpr uint64_t kIters = 1000;
constexpr uint64_t kSpinThreshold = 128;  // kernel/spinlock.h
constexpr uint64_t kYieldEvery = 128;     // kernel/spinlock.h
// The critical section of the runs with several CPUs, in pause iterations:
// each CPU holds the lock for nearly all of its loop (the loop outside the
// section is a few instructions), and its I sections last far longer than
// an IPI takes to start the other CPUs' loops (I x L pauses: some 2 ms on a
// host that runs ring 0 natively, ~0.1 s where ring 0 is emulated, kvm_pvm,
// docs/hosts.md), so the loops overlap, and whoever does not hold the lock
// then spins. Long against kSpinThreshold and kYieldEvery too, so a
// contended acquisition reaches the slow path (a wait or a yield).
constexpr uint64_t kContendedCs = 200;

struct Case {
  uint32_t cpus;
  std::string backend;
  std::string pvops;
  uint64_t cs;
};

std::string Name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = std::to_string(info.param.cpus) + "cpus_" + info.param.backend + "_" +
                     info.param.pvops + "_cs" + std::to_string(info.param.cs);
  for (char& c : name)
    if (c == ',' || c == ':') c = '_';
  return name;
}

GuestRun Lock(const Case& c) {
  return RunGuest(BuiltinGuest(),
                  "backend=" + c.backend + " pvops=" + c.pvops + " workload=lock,iters=" +
                      std::to_string(kIters) + ",cs=" + std::to_string(c.cs),
                  absl::Seconds(100), 0, false, c.cpus);
}

// Everything that must hold in any run of `c` (the file's comment).
void CheckRun(const Case& c, const GuestRun& run) {
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  ASSERT_EQ(run.result.exit_code, 0) << run.console;
  ASSERT_EQ(run.result.per_vcpu.size(), c.cpus);
  const uint64_t n = c.cpus;
  const bool sleeps = run.reports.at("config.pvops.spinlock") == "optimized";
  const bool directed = run.reports.at("config.pvops.yield") == "optimized";
  EXPECT_EQ(run.Report("lock.counter"), n * kIters);
  EXPECT_EQ(run.Report("check.lock.passed"), n);
  EXPECT_EQ(run.Report("check.failed"), 0u);
  EXPECT_EQ(run.Report("kernel.cpus_up"), n);

  uint64_t kicks = 0, kicked_wakes = 0, all_spins = 0, slow_path = 0;
  for (uint32_t cpu = 0; cpu < n; ++cpu) {
    SCOPED_TRACE(::testing::Message() << "vCPU " << cpu);
    const std::string prefix = cpu == 0 ? "kernel." : "smp.cpu" + std::to_string(cpu) + ".";
    const ExitStats& s = run.result.per_vcpu[cpu];
    // Every hypercall, as this CPU counted it.
    uint64_t hypercall_exits = 0;
    for (const HcName& hc : kAbiHypercalls) {
      SCOPED_TRACE(hc.name);
      EXPECT_EQ(s.hc_exits[hc.nr], run.ReportOr0(prefix + "hc_exits." + hc.name));
      hypercall_exits += s.hc_exits[hc.nr];
    }
    if (cpu != 0) {
      EXPECT_EQ(TotalExits(s), hypercall_exits);  // nothing but hypercalls on a secondary CPU
      EXPECT_EQ(run.Report(prefix + "lock_acquisitions"), kIters);
      EXPECT_EQ(run.Report(prefix + "ipi_calls"), 1u);
    } else {
      EXPECT_GE(run.Report(prefix + "lock_acquisitions"), kIters);  // the kernel's locks too
    }
    const uint64_t acquisitions = run.Report(prefix + "lock_acquisitions");
    const uint64_t spins = run.Report(prefix + "lock_spins");
    const uint64_t waits = run.Report(prefix + "lock_waits");
    const uint64_t wakes = run.Report(prefix + "lock_kicked_wakes");
    const uint64_t cpu_kicks = run.Report(prefix + "lock_kicks");
    const uint64_t yields = run.Report(prefix + "lock_yields");
    // Identities: the VMM's and the guest's counts of the same calls (the
    // guest counts each in the wrapper that makes it: not independent).
    EXPECT_EQ(CauseIn(s, Cause::kLockWait).exits, waits);
    EXPECT_EQ(CauseIn(s, Cause::kLockWait).ops, waits);
    EXPECT_EQ(s.hc_exits[MVMM_HC_lock_wait], waits);
    EXPECT_EQ(s.hc_errors[MVMM_HC_lock_wait], 0u);
    EXPECT_EQ(s.lock_wakes_by_kick, wakes);
    EXPECT_EQ(CauseIn(s, Cause::kLockKick).exits, cpu_kicks);
    EXPECT_EQ(CauseIn(s, Cause::kLockKick).ops, cpu_kicks);
    EXPECT_EQ(s.hc_errors[MVMM_HC_lock_kick], 0u);
    EXPECT_EQ(CauseIn(s, Cause::kYield).exits, yields);
    EXPECT_EQ(CauseIn(s, Cause::kYield).ops, yields);
    // Bounds.
    EXPECT_LE(s.lock_waits_slept, waits);
    EXPECT_LE(wakes, waits);
    EXPECT_LE(cpu_kicks, acquisitions);
    EXPECT_LE(waits, spins / kSpinThreshold);
    EXPECT_LE(yields, spins / kYieldEvery);
    EXPECT_LE(s.directed_yields, yields);
    // The variants' zeros.
    if (!sleeps) {
      EXPECT_EQ(waits, 0u);
      EXPECT_EQ(cpu_kicks, 0u);
      EXPECT_EQ(s.lock_waits_slept, 0u);
    } else {
      EXPECT_EQ(yields, 0u);
    }
    if (!directed) {
      EXPECT_EQ(s.directed_yields, 0u);
    }
    // One CPU: no contention at all.
    if (n == 1) {
      EXPECT_EQ(spins, 0u);
      EXPECT_EQ(waits, 0u);
      EXPECT_EQ(cpu_kicks, 0u);
      EXPECT_EQ(yields, 0u);
      EXPECT_EQ(CauseIn(s, Cause::kYield).exits, 0u);
    }
    kicks += cpu_kicks;
    kicked_wakes += wakes;
    all_spins += spins;
    slow_path += sleeps ? waits : yields;
  }
  // Several CPUs: the premise of every bound above is contention.
  if (n > 1) {
    EXPECT_GT(all_spins, 0u) << "no CPU ever found the lock held: nothing was contended";
    if (c.backend == "pv") {
      EXPECT_GT(slow_path, 0u) << "contended, but no " << (sleeps ? "lock_wait" : "yield")
                               << " was ever made: the slow path did not run";
    }
  }
  // In total: a wake by a kick consumed a kick.
  EXPECT_LE(kicked_wakes, kicks);
  EXPECT_EQ(run.result.stats.lock_wakes_by_kick, kicked_wakes);
  EXPECT_EQ(CauseIn(run.result.stats, Cause::kLockKick).ops, kicks);
}

class LockTest : public ::testing::TestWithParam<Case> {};

TEST_P(LockTest, EveryPerVcpuCountMatchesTheGuestsIdentitiesAndBounds) {
  REQUIRE_KVM();
  const Case& c = GetParam();
  const GuestRun run = Lock(c);
  CheckRun(c, run);
}

INSTANTIATE_TEST_SUITE_P(Cpus, LockTest,
                         ::testing::Values(Case{1, "pv", "naive", 20},
                                           Case{1, "pv", "optimized", 20},
                                           Case{2, "pv", "optimized", kContendedCs},
                                           Case{4, "pv", "naive", kContendedCs},
                                           Case{4, "pv", "optimized", kContendedCs},
                                           Case{4, "pv", "optimized,spinlock:naive", kContendedCs},
                                           Case{4, "pv", "naive,spinlock:optimized", kContendedCs},
                                           Case{4, "pv", "xen", kContendedCs},
                                           Case{4, "native", "optimized", kContendedCs}),
                         Name);

// The contended case a few times over: a lost wake-up would hang a run
// (bounded by the run's timeout, then reported as a failure, never a hang).
TEST(LockRepeatTest, ContendedRunsNeverHang) {
  REQUIRE_KVM();
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    const Case c{4, "pv", "optimized", kContendedCs};
    CheckRun(c, Lock(c));
  }
}

}  // namespace
}  // namespace lock_test
}  // namespace minivmm::testing
