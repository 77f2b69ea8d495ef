// Whole-VM tests of IPIs and TLB shootdowns across vCPUs (workload=shootdown,
// docs/exit-model.md "SMP"): for 1, 2 and 4 CPUs and each variant of the
// send_ipi and flush_tlb ops, every per-vCPU hypercall and cause count the
// VMM attributes equals the guest's own per-CPU count and the exit model's
// formula, and naive − optimized is exactly the formula's difference.
#include <string>

#include "gtest/gtest.h"
#include "minivmm_abi/boot.h"
#include "minivmm_abi/hypercall.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
// A namespace of the file's own: the test binaries are unity builds.
namespace shootdown_test {
namespace {

constexpr uint64_t kRounds = 20;  // the workload's default

uint64_t Total(const ExitStats& s) {
  uint64_t total = 0;
  for (uint64_t n : s.by_reason) total += n;
  return total;
}
const CauseCount& CauseOf(const ExitStats& s, Cause c) { return s.causes[static_cast<int>(c)]; }

// A guest report that may be absent (a secondary CPU reports only the
// hypercalls it made): absent is 0.
uint64_t ReportOr0(const GuestRun& run, const std::string& key) {
  auto it = run.reports.find(key);
  return it == run.reports.end() ? 0 : std::stoull(it->second);
}

struct Case {
  uint32_t cpus;
  std::string backend;  // pv or native
  std::string pvops;
};

std::string Name(const ::testing::TestParamInfo<Case>& info) {
  std::string name =
      std::to_string(info.param.cpus) + "cpus_" + info.param.backend + "_" + info.param.pvops;
  for (char& c : name)
    if (c == ',' || c == ':') c = '_';
  return name;
}

GuestRun Shootdown(uint32_t cpus, const std::string& backend, const std::string& pvops) {
  return RunGuest(BuiltinGuest(),
                  "backend=" + backend + " pvops=" + pvops +
                      " workload=shootdown,rounds=" + std::to_string(kRounds),
                  absl::Seconds(100), 0, false, cpus);
}

// The exit model's SMP formulas (docs/exit-model.md "SMP"), from what the
// guest says it used.
struct Model {
  uint64_t n, r, t;    // CPUs, rounds, targets (n - 1)
  uint64_t flush_ipi;  // 1: flush_tlb naive (FLUSH + IPI per target), 0: flush_tlb_others
  uint64_t sends;      // send_ipi exits per IPI to every target: t (naive) or [t > 0]
  uint64_t pv;         // 1 under backend=pv: mmu_update and mmuext_op are exits

  explicit Model(const GuestRun& run)
      : n(run.result.per_vcpu.size()),
        r(kRounds),
        t(n - 1),
        flush_ipi(run.reports.at("config.pvops.flush_tlb") == "naive" ? 1 : 0),
        sends(run.reports.at("config.pvops.send_ipi") == "naive" ? t : (t > 0 ? 1 : 0)),
        pv(run.reports.at("config.backend") == "pv" ? 1 : 0) {}

  uint64_t ipis_per_target() const { return 1 + r * (1 + flush_ipi); }  // join + per round
  uint64_t send_ipi_exits() const { return sends * ipis_per_target(); }
  uint64_t flush_tlb_others_exits() const { return (1 - flush_ipi) * r * (t > 0 ? 1 : 0); }
  uint64_t secondary_exits() const { return 2 + pv + 1 + ipis_per_target(); }
};

class ShootdownTest : public ::testing::TestWithParam<Case> {};

TEST_P(ShootdownTest, EveryPerVcpuCountEqualsTheGuestsAndTheModel) {
  REQUIRE_KVM();
  const Case& c = GetParam();
  const GuestRun run = Shootdown(c.cpus, c.backend, c.pvops);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  ASSERT_EQ(run.result.exit_code, 0) << run.console;
  ASSERT_EQ(run.result.per_vcpu.size(), c.cpus);
  EXPECT_EQ(run.result.stopped_by_vcpu, 0);
  const Model m(run);

  // The guest's self-checks: every CPU read every round's value.
  EXPECT_EQ(run.Report("check.shootdown.passed"), m.n + m.r * m.n);
  EXPECT_EQ(run.Report("check.failed"), 0u);
  EXPECT_EQ(run.Report("shootdown.targets"), m.t);
  EXPECT_EQ(run.Report("kernel.cpus_up"), m.n);

  // vCPU 0: every hypercall, as the guest counted it.
  const ExitStats& cpu0 = run.result.per_vcpu[0];
  for (const HcName& hc : kAbiHypercalls) {
    SCOPED_TRACE(hc.name);
    EXPECT_EQ(cpu0.hc_exits[hc.nr], run.Report(std::string("kernel.hc_exits.") + hc.name));
    EXPECT_EQ(cpu0.hc_ops[hc.nr], run.Report(std::string("kernel.hc.") + hc.name));
    EXPECT_EQ(cpu0.hc_errors[hc.nr], run.Report(std::string("kernel.hc_errors.") + hc.name));
  }
  // vCPU 0: every cause, as the guest counted it.
  EXPECT_EQ(CauseOf(cpu0, Cause::kIpi).ops, run.Report("kernel.ipis_sent"));
  EXPECT_EQ(CauseOf(cpu0, Cause::kIpi).exits, run.Report("kernel.hc_exits.send_ipi"));
  EXPECT_EQ(CauseOf(cpu0, Cause::kTlbFlush).ops,
            (1 - m.flush_ipi) * run.Report("kernel.tlb_flush_targets"));
  EXPECT_EQ(CauseOf(cpu0, Cause::kTlbFlush).exits, run.Report("kernel.hc_exits.flush_tlb_others"));
  EXPECT_EQ(cpu0.tlb_flushes_deferred,
            (1 - m.flush_ipi) *
                (run.Report("kernel.tlb_flush_targets") - run.Report("kernel.tlb_flushes_kicked")));
  EXPECT_EQ(cpu0.ipi_injections, run.Report("kernel.ipis"));
  EXPECT_EQ(CauseOf(cpu0, Cause::kPageTableUpdate).ops, m.pv * run.Report("kernel.pte_updates"));
  EXPECT_EQ(CauseOf(cpu0, Cause::kCr3Write).ops, m.pv * run.Report("kernel.cr3_writes"));
  EXPECT_EQ(CauseOf(cpu0, Cause::kCr0Write).ops, m.pv * run.Report("kernel.cr0_writes"));
  EXPECT_EQ(CauseOf(cpu0, Cause::kDescriptorUpdate).ops, run.Report("kernel.desc_updates"));
  EXPECT_EQ(CauseOf(cpu0, Cause::kMulticall).exits, run.Report("kernel.multicalls"));
  EXPECT_EQ(CauseOf(cpu0, Cause::kMulticall).ops, run.Report("kernel.multicall_entries"));
  if (m.pv == 1 && run.reports.at("config.pvops.irq") == "hypercall") {
    EXPECT_EQ(CauseOf(cpu0, Cause::kIfSet).ops, run.Report("kernel.irq_enables") +
                                                    run.Report("kernel.idle_blocks") +
                                                    run.Report("kernel.irq_restores_if_set"));
    EXPECT_EQ(
        CauseOf(cpu0, Cause::kIfClear).ops,
        run.Report("kernel.irq_disables") + (run.reports.at("config.pvops.irq_restore") == "naive"
                                                 ? run.Report("kernel.irq_restores_if_clear")
                                                 : 0));
  }
  // vCPU 0: the model.
  EXPECT_EQ(run.Report("kernel.hc_exits.send_ipi"), m.send_ipi_exits());
  EXPECT_EQ(run.Report("kernel.ipis_sent"), m.t * m.ipis_per_target());
  EXPECT_EQ(run.Report("kernel.hc_exits.flush_tlb_others"), m.flush_tlb_others_exits());
  EXPECT_EQ(run.Report("kernel.tlb_shootdowns"), m.r * (m.t > 0 ? 1 : 0));
  EXPECT_EQ(run.Report("kernel.tlb_flush_targets"), m.r * m.t);
  EXPECT_EQ(run.Report("kernel.tlb_flushes_kicked"), 0u);  // every target was blocked
  EXPECT_EQ(cpu0.tlb_flushes_deferred, (1 - m.flush_ipi) * m.r * m.t);
  EXPECT_EQ(cpu0.ipi_injections, 0u);
  EXPECT_EQ(run.Report("shootdown.pte_updates"), m.r);
  EXPECT_EQ(run.Report("shootdown.cr3_writes"), 2u);  // join and leave
  EXPECT_EQ(run.Report("shootdown.hc_exits"),
            m.send_ipi_exits() + m.flush_tlb_others_exits() + m.pv * (m.r + 2));

  // Each other CPU: every hypercall and cause, as it counted them, and the model.
  uint64_t flag_flushes = 0;
  for (uint32_t cpu = 1; cpu < c.cpus; ++cpu) {
    SCOPED_TRACE(::testing::Message() << "vCPU " << cpu);
    const std::string prefix = "smp.cpu" + std::to_string(cpu) + ".";
    const ExitStats& s = run.result.per_vcpu[cpu];
    uint64_t hypercall_exits = 0;
    for (const HcName& hc : kAbiHypercalls) {
      SCOPED_TRACE(hc.name);
      EXPECT_EQ(s.hc_exits[hc.nr], ReportOr0(run, prefix + "hc_exits." + hc.name));
      EXPECT_EQ(s.hc_ops[hc.nr], s.hc_exits[hc.nr]);  // no multicall
      EXPECT_EQ(s.hc_errors[hc.nr], 0u);
      hypercall_exits += s.hc_exits[hc.nr];
    }
    EXPECT_EQ(Total(s), hypercall_exits);  // nothing but hypercalls: no kick, no window
    EXPECT_EQ(s.ipi_injections, run.Report(prefix + "ipis"));
    EXPECT_EQ(s.hc_exits[MVMM_HC_sched_op], run.Report(prefix + "idle_blocks"));
    EXPECT_EQ(s.hc_exits[MVMM_HC_vcpu_op] + s.hc_exits[MVMM_HC_set_if],
              run.Report(prefix + "bringup_hypercalls"));
    EXPECT_EQ(CauseOf(s, Cause::kIfSet).ops, s.hc_exits[MVMM_HC_set_if]);
    EXPECT_EQ(CauseOf(s, Cause::kIfSet).exits, s.hc_exits[MVMM_HC_set_if]);
    EXPECT_EQ(CauseOf(s, Cause::kCr3Write).ops, m.pv * run.Report(prefix + "cr3_writes"));
    EXPECT_EQ(CauseOf(s, Cause::kCr3Write).exits, s.hc_exits[MVMM_HC_mmuext_op]);
    for (Cause other :
         {Cause::kIfClear, Cause::kCr0Write, Cause::kDescriptorUpdate, Cause::kPageTableUpdate,
          Cause::kMulticall, Cause::kIpi, Cause::kTlbFlush}) {
      EXPECT_EQ(CauseOf(s, other).ops, 0u) << CauseName(other);
      EXPECT_EQ(CauseOf(s, other).exits, 0u) << CauseName(other);
    }
    EXPECT_EQ(s.tlb_flushes_deferred, 0u);
    // The model.
    EXPECT_EQ(run.Report(prefix + "bringup_hypercalls"), 2u);
    EXPECT_EQ(run.Report(prefix + "ipis"), m.ipis_per_target());
    EXPECT_EQ(run.Report(prefix + "ipi_calls"), 1 + m.r);
    EXPECT_EQ(run.Report(prefix + "ipi_flushes"), m.flush_ipi * m.r);
    EXPECT_EQ(run.Report(prefix + "flag_flushes"), (1 - m.flush_ipi) * m.r);
    EXPECT_EQ(run.Report(prefix + "cr3_writes"), 1u);
    EXPECT_EQ(run.Report(prefix + "idle_blocks"), 1 + m.ipis_per_target());
    EXPECT_EQ(Total(s), m.secondary_exits());
    EXPECT_TRUE(run.result.vcpu_stops[cpu].idle);
    EXPECT_TRUE(run.result.vcpu_stops[cpu].with_vm);
    flag_flushes += run.Report(prefix + "flag_flushes");
  }
  // Two counters of the deferred flushes: the VMM's on the sender, the
  // flags the targets found.
  EXPECT_EQ(cpu0.tlb_flushes_deferred, flag_flushes);
  // The VM's sums.
  EXPECT_EQ(run.result.stats.ipi_injections, m.t * m.ipis_per_target());
  EXPECT_EQ(CauseOf(run.result.stats, Cause::kIpi).ops, run.result.stats.ipi_injections);
}

INSTANTIATE_TEST_SUITE_P(Cpus, ShootdownTest,
                         ::testing::Values(Case{1, "pv", "naive"}, Case{1, "pv", "optimized"},
                                           Case{2, "pv", "naive"}, Case{2, "pv", "optimized"},
                                           Case{4, "pv", "naive"}, Case{4, "pv", "optimized"},
                                           Case{4, "pv", "optimized,send_ipi:naive"},
                                           Case{4, "pv", "optimized,flush_tlb:naive"},
                                           Case{4, "pv", "xen"}, Case{4, "native", "naive"},
                                           Case{4, "native", "optimized"}),
                         Name);

// naive − optimized: the SMP part of the difference is exactly the model's;
// the rest (the seeds, at boot) is that of the same runs with one CPU, whose
// vCPU 0 does everything else exactly as vCPU 0 does here.
class ShootdownDifferenceTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(ShootdownDifferenceTest, NaiveMinusOptimizedIsTheModelsDifference) {
  REQUIRE_KVM();
  const uint32_t cpus = GetParam();
  const GuestRun naive = Shootdown(cpus, "pv", "naive");
  const GuestRun optimized = Shootdown(cpus, "pv", "optimized");
  const GuestRun naive1 = Shootdown(1, "pv", "naive");
  const GuestRun optimized1 = Shootdown(1, "pv", "optimized");
  for (const GuestRun* run : {&naive, &optimized, &naive1, &optimized1})
    ASSERT_EQ(run->result.reason, StopReason::kGuestShutdown) << run->result.detail;
  const uint64_t n = cpus, r = kRounds;
  const uint64_t cpu0_smp = n >= 2 ? (n - 2) * (1 + 2 * r) : 0;  // send_ipi + flush_tlb_others
  const uint64_t per_secondary = r;

  // vCPU 0 apart from its IPI and TLB-flush exits: the one-CPU run's.
  for (const auto& [run, one] : {std::pair{&naive, &naive1}, std::pair{&optimized, &optimized1}}) {
    const ExitStats& cpu0 = run->result.per_vcpu[0];
    const ExitStats& alone = one->result.per_vcpu[0];
    for (const HcName& hc : kAbiHypercalls) {
      if (hc.nr == MVMM_HC_send_ipi || hc.nr == MVMM_HC_flush_tlb_others) continue;
      EXPECT_EQ(cpu0.hc_exits[hc.nr], alone.hc_exits[hc.nr]) << hc.name;
    }
    EXPECT_EQ(
        Total(cpu0) - cpu0.hc_exits[MVMM_HC_send_ipi] - cpu0.hc_exits[MVMM_HC_flush_tlb_others],
        Total(alone));
  }
  const auto smp_exits = [](const GuestRun& run) {
    const ExitStats& s = run.result.per_vcpu[0];
    return CauseOf(s, Cause::kIpi).exits + CauseOf(s, Cause::kTlbFlush).exits;
  };
  EXPECT_EQ(smp_exits(naive) - smp_exits(optimized), cpu0_smp);
  for (uint32_t cpu = 1; cpu < cpus; ++cpu)
    EXPECT_EQ(Total(naive.result.per_vcpu[cpu]) - Total(optimized.result.per_vcpu[cpu]),
              per_secondary)
        << "vCPU " << cpu;
  const uint64_t seeds = Total(naive1.result.stats) - Total(optimized1.result.stats);
  EXPECT_EQ(Total(naive.result.stats) - Total(optimized.result.stats),
            seeds + cpu0_smp + (n - 1) * per_secondary);
}

INSTANTIATE_TEST_SUITE_P(Cpus, ShootdownDifferenceTest, ::testing::Values(1u, 2u, 4u));

}  // namespace
}  // namespace shootdown_test
}  // namespace minivmm::testing
