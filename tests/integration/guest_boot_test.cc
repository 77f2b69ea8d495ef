// Whole-VM tests with the built-in guest kernel (boot, console and shutdown): the console
// on both backends, the guest's report, and deliberate faults. Exit counts
// are checked against the guest's own counts of what it did.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "minivmm_abi/boot.h"
#include "minivmm_abi/hypercall.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
namespace {

class HelloTest : public ::testing::TestWithParam<int> {};

TEST_P(HelloTest, PvConsoleIsOneConsoleIoPerLine) {
  REQUIRE_KVM();
  const int lines = GetParam();
  GuestRun run =
      RunGuest(BuiltinGuest(), "backend=pv workload=hello,lines=" + std::to_string(lines));
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  EXPECT_EQ(run.result.exit_code, 0);
  // The hello workload prints exactly `lines` lines and nothing else, one
  // console_io call per line.
  EXPECT_EQ(run.HypercallOps(MVMM_HC_console_io), static_cast<uint64_t>(lines));
  EXPECT_EQ(run.HypercallExits(MVMM_HC_console_io), static_cast<uint64_t>(lines));
  EXPECT_EQ(run.Report("kernel.console.calls"), static_cast<uint64_t>(lines));
  EXPECT_EQ(run.Report("hello.lines"), static_cast<uint64_t>(lines));
  EXPECT_EQ(run.Pio("uart"), 0u);
  std::string expected;
  for (int i = 1; i <= lines; ++i) expected += "hello " + std::to_string(i) + "\n";
  EXPECT_EQ(run.console, expected);
}

TEST_P(HelloTest, NativeConsoleIsTwoUartExitsPerByte) {
  REQUIRE_KVM();
  const int lines = GetParam();
  GuestRun run =
      RunGuest(BuiltinGuest(), "backend=native workload=hello,lines=" + std::to_string(lines));
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  EXPECT_EQ(run.result.exit_code, 0);
  // Each byte is one LSR read (the UART always reports THR empty) and one
  // THR write; no console_io at all.
  EXPECT_EQ(run.Pio("uart"), 2 * run.Report("kernel.console.bytes"));
  EXPECT_EQ(run.Report("kernel.console.bytes"), run.console.size());
  EXPECT_EQ(run.HypercallOps(MVMM_HC_console_io), 0u);
  EXPECT_EQ(run.Report("hello.lines"), static_cast<uint64_t>(lines));
}

INSTANTIATE_TEST_SUITE_P(Lines, HelloTest, ::testing::Values(0, 1, 5));

TEST(GuestBootTest, ReportsTheConfigurationItUses) {
  REQUIRE_KVM();
  GuestRun run = RunGuest(BuiltinGuest(), "backend=native pvops=naive workload=none");
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  EXPECT_EQ(run.result.exit_code, 0);
  EXPECT_EQ(run.reports["config.backend"], "native");
  EXPECT_EQ(run.reports["config.workload"], "none");
  for (const char* op : {"irq_restore", "fpu_switch", "tls", "pte_flags"})
    EXPECT_EQ(run.reports[std::string("config.pvops.") + op], "naive") << op;
  // Every report is one hypercall; the guest counts its own.
  EXPECT_EQ(run.HypercallOps(MVMM_HC_report), run.Report("kernel.hc.report"));
}

TEST(GuestBootTest, UnknownCommandLineKeyIsRefusedWithCode2) {
  REQUIRE_KVM();
  GuestRun run = RunGuest(BuiltinGuest(), "workload=none frobnicate=1");
  EXPECT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
  EXPECT_EQ(run.result.exit_code, 2);
  EXPECT_NE(run.console.find("frobnicate"), std::string::npos) << run.console;
}

struct FaultCase {
  const char* kind;
  const char* vector_text;
};

class GuestFaultTest : public ::testing::TestWithParam<FaultCase> {};

TEST_P(GuestFaultTest, FaultExitsWithCode3AndNamesTheVector) {
  REQUIRE_KVM();
  GuestRun run = RunGuest(BuiltinGuest(), std::string("workload=fault,kind=") + GetParam().kind);
  EXPECT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
  EXPECT_EQ(run.result.exit_code, 3);
  EXPECT_NE(run.console.find(GetParam().vector_text), std::string::npos) << run.console;
}

INSTANTIATE_TEST_SUITE_P(Kinds, GuestFaultTest,
                         ::testing::Values(FaultCase{"ud", "exception 6 (#UD)"},
                                           FaultCase{"gp", "exception 13 (#GP)"},
                                           FaultCase{"pf", "exception 14 (#PF)"},
                                           FaultCase{"de", "exception 0 (#DE)"},
                                           FaultCase{"int3", "exception 3 (#BP)"}),
                         [](const auto& info) { return std::string(info.param.kind); });

// workload=fault,kind=gdt loads a copy of the GDT at another address (the
// same descriptors, so the CPU keeps running) and asks CurrentCpu which CPU
// this is: a GDT base that is no CPU's is a guest panic (exit code 4)
// naming that base, never CPU 0.
TEST(GuestBootTest, AGdtBaseThatIsNoCpusPanicsNamingIt) {
  REQUIRE_KVM();
  GuestRun run = RunGuest(BuiltinGuest(), "workload=fault,kind=gdt");
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  EXPECT_EQ(run.result.exit_code, 4) << run.console;  // kExitAssert: a guest panic
  const std::string said = "fault: GDT copy at 0x";
  const size_t at = run.console.find(said);
  ASSERT_NE(at, std::string::npos) << run.console;
  const size_t end = run.console.find('\n', at);
  const std::string base = run.console.substr(at + said.size(), end - at - said.size());
  const uint64_t value = std::stoull(base, nullptr, 16);
  // Not any CPU's: outside the GDT page's blocks altogether.
  EXPECT_TRUE(value < MVMM_GDT_GPA || value >= MVMM_CPU_GDT_GPA(MVMM_MAX_CPUS)) << base;
  EXPECT_NE(run.console.find("guest: panic: CurrentCpu: GDT base 0x" + base +
                             " is no CPU's (CPU n's is at 0xc0000000 + n*0x80, n < 32)\n"),
            std::string::npos)
      << run.console;
  EXPECT_EQ(run.console.find("CurrentCpu answered"), std::string::npos) << run.console;
}

// A guest panic on 2 vCPUs with each vCPU's last exits kept
// (VmConfig::recent_exits, docs/design.md "Recent exits"): each ring holds
// the vCPU's last min(N, exits) exits, numbered up to its exit count; the
// panicking vCPU's last is its sched_op(shutdown, 4); the diagnosis shows
// them after the stopping vCPU's registers.
class RecentExitsTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(RecentExitsTest, APanicsLastExitsEndWithItsShutdown) {
  REQUIRE_KVM();
  const uint32_t kept = GetParam();
  VmConfig config = GuestConfig(BuiltinGuest(), "workload=fault,kind=gdt");
  config.cpus = 2;
  config.recent_exits = kept;
  const GuestRun run = RunGuestWith(config);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  ASSERT_EQ(run.result.exit_code, MVMM_SHUTDOWN_ASSERT) << run.console;
  ASSERT_EQ(run.result.stopped_by_vcpu, 0);
  if (kept == 0) {
    EXPECT_TRUE(run.result.recent_exits.empty());
    return;
  }
  ASSERT_EQ(run.result.recent_exits.size(), 2u);
  for (uint32_t v = 0; v < 2; ++v) {
    const std::vector<RecentExit>& exits = run.result.recent_exits[v];
    const uint64_t total = TotalExits(run.result.per_vcpu[v]);
    ASSERT_EQ(exits.size(), std::min<uint64_t>(kept, total)) << "vCPU " << v;
    for (size_t i = 0; i < exits.size(); ++i)
      EXPECT_EQ(exits[i].sequence, total - exits.size() + i) << "vCPU " << v;
  }
  const RecentExit& last = run.result.recent_exits[0].back();
  EXPECT_TRUE(last.hypercall);
  EXPECT_EQ(last.rax, MVMM_HC_sched_op);
  EXPECT_EQ(last.rdi, MVMM_SCHEDOP_SHUTDOWN);
  EXPECT_EQ(last.rsi, static_cast<uint64_t>(MVMM_SHUTDOWN_ASSERT));
  EXPECT_EQ(last.cpl, 0u);
  EXPECT_EQ(last.rip, run.Register("rip"));  // vCPU 0 stopped there
  const std::vector<std::string> lines = StopDiagnosis(run.result);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "vCPU 0 registers:");
  const std::string header = "vCPU 0: its last " + std::to_string(run.result.recent_exits[0].size()) +
                             " of " + std::to_string(TotalExits(run.result.per_vcpu[0])) +
                             " exits, oldest first:";
  auto at = std::find(lines.begin(), lines.end(), header);
  ASSERT_NE(at, lines.end()) << header;
  at += static_cast<std::ptrdiff_t>(run.result.recent_exits[0].size());
  EXPECT_NE(at->find("hypercall sched_op rdi=0x2 rsi=0x4 rip=0x"), std::string::npos) << *at;
  EXPECT_NE(std::find_if(lines.begin(), lines.end(),
                         [](const std::string& l) { return l.rfind("vCPU 1: its last ", 0) == 0; }),
            lines.end());
}

INSTANTIATE_TEST_SUITE_P(Kept, RecentExitsTest, ::testing::Values(0u, 4u, 16u));

}  // namespace
}  // namespace minivmm::testing
