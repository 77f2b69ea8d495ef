// Whole-VM tests of tasks across CPUs: the ring workloads (workload=ctx|pipe
// with spread= and migrate=) and the AIM7-like mix (workload=aim;
// docs/exit-model.md "SMP: lat_ctx across CPUs").
// Which CPU is idle when a token arrives depends on timing, so these tests
// assert what holds on every run: every per-vCPU hypercall and cause the
// VMM counts equals the same CPU's own count in the guest, the guest's
// self-checks (TLS, FPU and address space after every pass and after every
// move to another CPU) all passed, the moves the workload asked for
// happened, IPIs are exactly the reschedule IPIs, and the bounds between
// them. With one CPU, spread= and migrate= change nothing at all.
#include <string>

#include "gtest/gtest.h"
#include "minivmm_abi/hypercall.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
// A namespace of the file's own: the test binaries are unity builds.
namespace ring_smp_test {
namespace {

constexpr uint64_t kRounds = 10;

const CauseCount& CauseOf(const ExitStats& s, Cause c) { return s.causes[static_cast<int>(c)]; }

struct Case {
  uint32_t cpus;
  std::string backend;
  std::string pvops;
  std::string workload;  // without rounds=
  uint64_t tasks;
  uint64_t fpu;      // 1: fpu=all
  uint64_t migrate;  // rounds between moves (0: none)
  bool spread;
};

std::string Name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = std::to_string(info.param.cpus) + "cpus_" + info.param.backend + "_" +
                     info.param.pvops + "_" + info.param.workload;
  for (char& c : name)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

GuestRun Ring(const Case& c) {
  return RunGuest(BuiltinGuest(),
                  "backend=" + c.backend + " pvops=" + c.pvops + " workload=" + c.workload +
                      ",rounds=" + std::to_string(kRounds),
                  absl::Seconds(200), 0, false, c.cpus);
}

// The guest's prefix for CPU n's own counts.
std::string Prefix(uint32_t cpu) {
  return cpu == 0 ? "kernel." : "smp.cpu" + std::to_string(cpu) + ".";
}

// The guest's counts added over its CPUs.
struct Sums {
  uint64_t migrations = 0, remote = 0, resched = 0, sent = 0, taken = 0;
};

// Per vCPU, every hypercall and cause the VMM counted equals the guest's own
// count on that CPU.
Sums ExpectPerVcpuCountsEqualTheGuests(const GuestRun& run, const std::string& backend) {
  Sums sums;
  const uint64_t pv = backend == "pv" ? 1 : 0;
  for (uint32_t cpu = 0; cpu < run.result.per_vcpu.size(); ++cpu) {
    SCOPED_TRACE(::testing::Message() << "vCPU " << cpu);
    const std::string p = Prefix(cpu);
    const ExitStats& s = run.result.per_vcpu[cpu];
    for (const HcName& hc : kAbiHypercalls) {
      SCOPED_TRACE(hc.name);
      EXPECT_EQ(s.hc_exits[hc.nr], run.ReportOr0(p + "hc_exits." + hc.name));
      EXPECT_EQ(s.hc_errors[hc.nr], 0u);
    }
    EXPECT_EQ(CauseOf(s, Cause::kDescriptorUpdate).ops, run.ReportOr0(p + "desc_updates"));
    EXPECT_EQ(CauseOf(s, Cause::kCr0Write).ops, pv * run.ReportOr0(p + "cr0_writes"));
    EXPECT_EQ(CauseOf(s, Cause::kCr3Write).ops, pv * run.ReportOr0(p + "cr3_writes"));
    EXPECT_EQ(CauseOf(s, Cause::kMulticall).exits, run.ReportOr0(p + "multicalls"));
    EXPECT_EQ(CauseOf(s, Cause::kMulticall).ops, run.ReportOr0(p + "multicall_entries"));
    // Every hypercall exit found the GDT base and TR the VMM gave this vCPU
    // (checked in a build without NDEBUG, as this test's; 0 otherwise too).
    EXPECT_EQ(s.identity_mismatches, 0u);
    EXPECT_EQ(CauseOf(s, Cause::kIpi).ops, run.ReportOr0(p + "ipis_sent"));
    EXPECT_EQ(s.ipi_injections, run.ReportOr0(p + "ipis"));
    EXPECT_EQ(CauseOf(s, Cause::kLockWait).exits, run.ReportOr0(p + "lock_waits"));
    EXPECT_EQ(CauseOf(s, Cause::kLockKick).exits, run.ReportOr0(p + "lock_kicks"));
    EXPECT_EQ(CauseOf(s, Cause::kYield).exits, run.ReportOr0(p + "lock_yields"));
    EXPECT_EQ(CauseOf(s, Cause::kTlbFlush).ops, 0u);
    sums.migrations += run.ReportOr0(p + "migrations");
    sums.remote += run.ReportOr0(p + "remote_enqueues");
    sums.resched += run.ReportOr0(p + "resched_ipis");
    sums.sent += run.ReportOr0(p + "ipis_sent");
    sums.taken += run.ReportOr0(p + "ipis");
  }
  return sums;
}

// The only IPIs are reschedule IPIs to idle CPUs, at most one per task
// queued on another CPU; two sent to one CPU before it takes them are one
// interrupt.
void ExpectIpiBounds(const GuestRun& run, const Sums& sums) {
  EXPECT_EQ(sums.sent, sums.resched);
  EXPECT_LE(sums.resched, sums.remote);
  EXPECT_LE(sums.taken, sums.sent);
  EXPECT_EQ(run.result.stats.ipi_injections, sums.taken);
}

class RingSmpTest : public ::testing::TestWithParam<Case> {};

TEST_P(RingSmpTest, EveryPerVcpuCountEqualsTheGuestsAndTheChecksPassed) {
  REQUIRE_KVM();
  const Case& c = GetParam();
  const GuestRun run = Ring(c);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  ASSERT_EQ(run.result.exit_code, 0) << run.console;
  ASSERT_EQ(run.result.per_vcpu.size(), c.cpus);
  const std::string name = c.workload.substr(0, c.workload.find(','));

  // Self-checks: per task, its state after start and after every pass
  // (private pages, %fs, %gs, and the FPU registers with fpu=all); the
  // starter's system-call error probe; per move, the CPU it landed on and
  // its state there.
  const uint64_t per_state = 3 + c.fpu;
  const uint64_t moves_per_task = c.migrate != 0 && c.cpus > 1 ? (kRounds - 1) / c.migrate : 0;
  EXPECT_EQ(run.Report("check." + name + ".passed"),
            c.tasks * (kRounds + 1) * per_state + 1 + c.tasks * moves_per_task * (1 + per_state));
  EXPECT_EQ(run.Report("check.failed"), 0u);
  EXPECT_EQ(run.Report(name + ".cpus"), c.spread || c.migrate != 0 ? c.cpus : 1);

  const Sums sums = ExpectPerVcpuCountsEqualTheGuests(run, c.backend);
  // A CPU that got a task at the start ran it: it switched.
  for (uint32_t cpu = 0; c.spread && cpu < c.cpus && cpu < c.tasks; ++cpu)
    EXPECT_GT(run.ReportOr0(Prefix(cpu) + "switches"), 0u) << "vCPU " << cpu;
  ExpectIpiBounds(run, sums);
  EXPECT_EQ(sums.migrations, c.tasks * moves_per_task);
  if (c.cpus > 1 && (c.spread || moves_per_task > 0)) {
    EXPECT_GE(sums.remote, 1u);
  } else {
    EXPECT_EQ(sums.remote, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cpus, RingSmpTest,
    ::testing::Values(Case{4, "pv", "naive", "ctx,spread=1", 3, 1, 0, true},
                      Case{4, "pv", "optimized", "ctx,spread=1", 3, 1, 0, true},
                      Case{4, "pv", "xen", "ctx,spread=1,migrate=3", 3, 1, 3, true},
                      Case{2, "pv", "optimized", "pipe,spread=1,fpu=none", 2, 0, 0, true},
                      Case{3, "native", "naive", "ctx,spread=1,migrate=2", 3, 1, 2, true},
                      Case{3, "pv", "optimized,fpu_switch:naive", "ctx,migrate=2,tls=all", 3, 1, 2,
                           false},
                      Case{1, "pv", "naive", "ctx,spread=1,migrate=2", 3, 1, 2, true}),
    Name);

// With one CPU the new parameters change nothing: every exit count is the
// plain ring's.
TEST(RingSmpOneCpuTest, SpreadAndMigrateChangeNoCountWithOneCpu) {
  REQUIRE_KVM();
  const std::string base = "backend=pv pvops=naive workload=ctx,rounds=" + std::to_string(kRounds);
  const GuestRun plain = RunGuest(BuiltinGuest(), base, absl::Seconds(100));
  const GuestRun moved = RunGuest(BuiltinGuest(), base + ",spread=1,migrate=2", absl::Seconds(100));
  ASSERT_EQ(plain.result.exit_code, 0) << plain.console;
  ASSERT_EQ(moved.result.exit_code, 0) << moved.console;
  EXPECT_EQ(moved.result.stats.by_reason, plain.result.stats.by_reason);
  EXPECT_EQ(moved.result.stats.hc_exits, plain.result.stats.hc_exits);
  EXPECT_EQ(moved.result.stats.hc_ops, plain.result.stats.hc_ops);
  EXPECT_EQ(moved.Report("kernel.switches"), plain.Report("kernel.switches"));
  EXPECT_EQ(moved.Report("kernel.migrations"), 0u);
}

// workload=aim: the job mix on every CPU, every job self-checked, the
// moves asked for, and the per-vCPU identities.
struct AimCase {
  uint32_t cpus;
  std::string backend;
  std::string pvops;
  uint64_t tasks, iters, migrate;
};

class AimTest : public ::testing::TestWithParam<AimCase> {};

TEST_P(AimTest, EveryJobPassesAndEveryPerVcpuCountEqualsTheGuests) {
  REQUIRE_KVM();
  const AimCase& c = GetParam();
  const GuestRun run =
      RunGuest(BuiltinGuest(),
               "backend=" + c.backend + " pvops=" + c.pvops +
                   " workload=aim,tasks=" + std::to_string(c.tasks) +
                   ",iters=" + std::to_string(c.iters) + ",migrate=" + std::to_string(c.migrate),
               absl::Seconds(200), 0, false, c.cpus);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  ASSERT_EQ(run.result.exit_code, 0) << run.console;
  // Five checked jobs per iteration, one more per move.
  const uint64_t moves = c.migrate != 0 && c.cpus > 1 ? (c.iters - 1) / c.migrate : 0;
  EXPECT_EQ(run.Report("check.aim.passed"), c.tasks * (5 * c.iters + moves));
  EXPECT_EQ(run.Report("check.failed"), 0u);
  EXPECT_EQ(run.Report("aim.jobs"), c.tasks * c.iters);
  const Sums sums = ExpectPerVcpuCountsEqualTheGuests(run, c.backend);
  ExpectIpiBounds(run, sums);
  EXPECT_EQ(sums.migrations, c.tasks * moves);
  // Every task's CPU ran it: it switched there.
  for (uint32_t cpu = 0; cpu < c.cpus && cpu < c.tasks; ++cpu)
    EXPECT_GT(run.ReportOr0(Prefix(cpu) + "switches"), 0u) << "vCPU " << cpu;
}

INSTANTIATE_TEST_SUITE_P(Cpus, AimTest,
                         ::testing::Values(AimCase{4, "pv", "naive", 4, 8, 3},
                                           AimCase{4, "pv", "optimized", 5, 8, 0},
                                           AimCase{2, "pv", "xen", 4, 8, 2},
                                           AimCase{3, "native", "optimized", 3, 8, 2},
                                           AimCase{1, "pv", "naive", 3, 8, 2}),
                         [](const ::testing::TestParamInfo<AimCase>& info) {
                           std::string name = std::to_string(info.param.cpus) + "cpus_" +
                                              info.param.backend + "_" + info.param.pvops;
                           return name;
                         });

// Preemption with a timer: every CPU that runs ring-3 tasks runs its own
// tick (vcpu_op set_periodic_timer on the secondary CPUs) and stops it when
// the workload ends, so every timer interrupt the VMM injected into a vCPU
// is one that CPU counted.
TEST(RingSmpTimerTest, EveryCpuTicksOnItsOwnAndCountsEveryTimerInterrupt) {
  REQUIRE_KVM();
  const uint32_t cpus = 3;
  const GuestRun run = RunGuest(BuiltinGuest(),
                                "backend=pv pvops=optimized workload=ctx,tasks=6,spread=1,preempt=1,"
                                "rounds=" + std::to_string(kRounds),
                                absl::Seconds(200), 100, false, cpus);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  ASSERT_EQ(run.result.exit_code, 0) << run.console;
  EXPECT_EQ(run.Report("check.failed"), 0u);
  const Sums sums = ExpectPerVcpuCountsEqualTheGuests(run, "pv");
  ExpectIpiBounds(run, sums);
  for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
    SCOPED_TRACE(::testing::Message() << "vCPU " << cpu);
    const std::string p = Prefix(cpu);
    EXPECT_EQ(run.result.per_vcpu[cpu].timer_injections, run.ReportOr0(p + "timer_irqs"));
    if (cpu == 0) continue;
    // Started once (when it first ran a ring-3 task), stopped once.
    EXPECT_EQ(run.ReportOr0(p + "tick_starts"), 1u);
    EXPECT_EQ(run.ReportOr0(p + "tick_stops"), 1u);
    EXPECT_EQ(run.ReportOr0(p + "hc_exits.vcpu_op"), 1u + 2u);  // run state, start, stop
  }
}

}  // namespace
}  // namespace ring_smp_test
}  // namespace minivmm::testing
