// Whole-VM tests with several vCPUs (docs/design.md "Several vCPUs"): every
// secondary CPU comes up and costs exactly the exits the exit model gives
// (docs/exit-model.md "Secondary CPUs"), CPU 0's exits are those of a
// one-CPU run, and a stop from any direction stops every vCPU and names the
// one that did it.
#include <dirent.h>

#include <random>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "minivmm_abi/boot.h"
#include "minivmm_abi/hypercall.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
namespace {

uint64_t Total(const ExitStats& s) {
  uint64_t total = 0;
  for (uint64_t n : s.by_reason) total += n;
  return total;
}
uint64_t Reason(const ExitStats& s, ExitReason r) { return s.by_reason[static_cast<int>(r)]; }

struct SmpRun {
  RunResult result;
  std::map<std::string, std::string> reports;
  uint64_t Report(const std::string& key) const {
    auto it = reports.find(key);
    EXPECT_NE(it, reports.end()) << "the guest did not report " << key;
    return it == reports.end() ? ~0ull : std::stoull(it->second);
  }
};

// Runs `kernel` with `cpus` vCPUs; `during` runs on another thread while the
// VM runs (it may call RequestStop) and `observer`, if set, sees every exit.
SmpRun RunSmp(const std::string& kernel, const std::string& cmdline, uint32_t cpus,
              absl::Duration timeout = absl::Seconds(60), std::function<void(Vm&)> during = nullptr,
              ExitObserver observer = nullptr) {
  SmpRun run;
  RecordingConsole console;
  VmConfig config;
  config.kernel_path = kernel;
  config.cmdline = cmdline;
  config.cpus = cpus;
  config.memory_bytes = 16ull << 20;
  config.timeout = timeout;
  config.console = &console;
  absl::StatusOr<std::unique_ptr<Vm>> vm = Vm::Create(config);
  EXPECT_TRUE(vm.ok()) << vm.status();
  if (!vm.ok()) return run;
  if (observer) (*vm)->SetExitObserver(std::move(observer));
  std::thread other;
  if (during) other = std::thread([&] { during(**vm); });
  absl::StatusOr<RunResult> result = (*vm)->Run();
  if (other.joinable()) other.join();
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return run;
  run.result = *std::move(result);
  for (const auto& [k, v] : run.result.reports.entries) run.reports[k] = v;
  EXPECT_EQ(run.result.per_vcpu.size(), cpus);
  EXPECT_EQ(run.result.vcpu_stops.size(), cpus);
  return run;
}

// Each secondary CPU of the tiny SMP guest: register its runstate area, block.
void ExpectIdleSecondary(const SmpRun& run, uint32_t cpu) {
  SCOPED_TRACE(::testing::Message() << "vCPU " << cpu);
  const ExitStats& s = run.result.per_vcpu[cpu];
  EXPECT_EQ(s.hc_exits[MVMM_HC_vcpu_op], 1u);
  EXPECT_EQ(s.hc_exits[MVMM_HC_sched_op], 1u);
  EXPECT_EQ(Reason(s, ExitReason::kIo), 2u);
  EXPECT_EQ(Total(s), 2u);
  EXPECT_TRUE(run.result.vcpu_stops[cpu].idle);
}

class SmpKernelTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(SmpKernelTest, EverySecondaryCpuComesUpAndCostsItsBringUpAndOneBlock) {
  REQUIRE_KVM();
  const uint32_t cpus = GetParam();
  const std::string cmdline = "backend=pv workload=hello,lines=2";
  SmpRun one = RunSmp(BuiltinGuest(), cmdline, 1);
  SmpRun run = RunSmp(BuiltinGuest(), cmdline, cpus);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
  EXPECT_EQ(run.result.exit_code, 0);
  EXPECT_EQ(run.result.stopped_by_vcpu, 0);
  EXPECT_EQ(run.Report("kernel.cpus_up"), cpus);

  // CPU 0: the guest's own hypercall counts, and the same exits as one CPU.
  ASSERT_EQ(one.result.reason, StopReason::kGuestShutdown);
  const ExitStats& cpu0 = run.result.per_vcpu[0];
  for (uint32_t nr = 0; nr < MVMM_HC_MAX; ++nr) {
    const std::string& name = run.result.hypercall_names[nr];
    if (name.empty()) continue;
    SCOPED_TRACE(name);
    EXPECT_EQ(cpu0.hc_exits[nr], run.Report("kernel.hc_exits." + name));
    EXPECT_EQ(cpu0.hc_ops[nr], run.Report("kernel.hc." + name));
    EXPECT_EQ(cpu0.hc_exits[nr], one.result.per_vcpu[0].hc_exits[nr]);
    EXPECT_EQ(cpu0.hc_ops[nr], one.result.per_vcpu[0].hc_ops[nr]);
  }
  EXPECT_EQ(cpu0.by_reason, one.result.per_vcpu[0].by_reason);
  EXPECT_EQ(cpu0.pio_by_device, one.result.per_vcpu[0].pio_by_device);
  EXPECT_FALSE(run.result.vcpu_stops[0].with_vm);

  // Each secondary CPU: exits = bring-up hypercalls + idle blocks, as the
  // guest counted them (docs/exit-model.md "Secondary CPUs").
  uint64_t secondary_exits = 0;
  for (uint32_t cpu = 1; cpu < cpus; ++cpu) {
    SCOPED_TRACE(::testing::Message() << "vCPU " << cpu);
    const std::string prefix = "smp.cpu" + std::to_string(cpu) + ".";
    const uint64_t bringup = run.Report(prefix + "bringup_hypercalls");
    const uint64_t blocks = run.Report(prefix + "idle_blocks");
    EXPECT_EQ(bringup, 2u);
    EXPECT_EQ(blocks, 1u);
    const ExitStats& s = run.result.per_vcpu[cpu];
    EXPECT_EQ(Total(s), bringup + blocks);
    EXPECT_EQ(s.hc_exits[MVMM_HC_vcpu_op], run.Report(prefix + "hc_exits.vcpu_op"));
    EXPECT_EQ(s.hc_exits[MVMM_HC_set_if], run.Report(prefix + "hc_exits.set_if"));
    EXPECT_EQ(s.hc_exits[MVMM_HC_vcpu_op] + s.hc_exits[MVMM_HC_set_if], bringup);
    EXPECT_EQ(s.hc_exits[MVMM_HC_sched_op], blocks);
    EXPECT_EQ(s.causes[static_cast<int>(Cause::kIfSet)].exits, 1u);  // interrupts on, once
    EXPECT_EQ(s.ipi_injections, 0u);
    EXPECT_TRUE(run.result.vcpu_stops[cpu].with_vm);
    EXPECT_TRUE(run.result.vcpu_stops[cpu].idle);
    EXPECT_EQ(run.result.vcpu_stops[cpu].reason, StopReason::kGuestShutdown);
    secondary_exits += Total(s);
  }
  EXPECT_EQ(Total(run.result.stats), Total(cpu0) + secondary_exits);
  EXPECT_EQ(Total(run.result.stats), Total(one.result.stats) + 3 * (cpus - 1));
}

INSTANTIATE_TEST_SUITE_P(Cpus, SmpKernelTest, ::testing::Values(1u, 2u, 4u, 8u));

class SmpStopTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(SmpStopTest, GuestShutdownFromTheBootCpuStopsEveryCpu) {
  REQUIRE_KVM();
  const uint32_t cpus = GetParam();
  SmpRun run = RunSmp(TinyGuest("smp"), "s", cpus);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
  EXPECT_EQ(run.result.exit_code, static_cast<int>(cpus - 1));
  EXPECT_EQ(run.result.stopped_by_vcpu, 0);
  EXPECT_EQ(Total(run.result.per_vcpu[0]), 1u);  // the shutdown
  for (uint32_t cpu = 1; cpu < cpus; ++cpu) {
    ExpectIdleSecondary(run, cpu);
    EXPECT_TRUE(run.result.vcpu_stops[cpu].with_vm);
  }
}

TEST_P(SmpStopTest, TripleFaultOnTheLastCpuStopsEveryCpuAndNamesIt) {
  REQUIRE_KVM();
  const uint32_t cpus = GetParam();
  SmpRun run = RunSmp(TinyGuest("smp"), "f", cpus);
  ASSERT_EQ(run.result.reason, StopReason::kTripleFault) << run.result.detail;
  EXPECT_EQ(run.result.stopped_by_vcpu, static_cast<int>(cpus - 1));
  const ExitStats& faulted = run.result.per_vcpu[cpus - 1];
  EXPECT_EQ(Reason(faulted, ExitReason::kShutdown), 1u);
  EXPECT_EQ(Total(faulted), 1u);
  EXPECT_FALSE(run.result.vcpu_stops[cpus - 1].with_vm);
  for (uint32_t cpu = 1; cpu + 1 < cpus; ++cpu) ExpectIdleSecondary(run, cpu);
  if (cpus > 1) {
    // CPU 0 spins in the guest until the stop kicks it out: one exit.
    EXPECT_EQ(Reason(run.result.per_vcpu[0], ExitReason::kIntr), 1u);
    EXPECT_EQ(Total(run.result.per_vcpu[0]), 1u);
    EXPECT_TRUE(run.result.vcpu_stops[0].with_vm);
    EXPECT_FALSE(run.result.vcpu_stops[0].idle);
    EXPECT_EQ(run.result.vcpu_stops[0].reason, StopReason::kTripleFault);
  }
}

// In mode "w" CPU 0 yields once when every other CPU is idle; the observer
// sees that exit. (A block's exit reaches the observer only when the block
// ends, at the stop.)
struct StopWhenIdle {
  absl::Notification all_idle;
  void See(const ExitEvent& e) {
    if (e.vcpu == 0 && e.hypercall == MVMM_HC_sched_op) all_idle.Notify();
  }
};

// CPU 0 in mode "w" after a stop from the host: its yield, and the kick's
// `intr` exit when the stop found it in the guest. `kicked_in_guest`: the
// stop came long after the yield (a timeout); a stop made from the observer's
// thread may reach CPU 0 before it re-enters the guest after the yield, and
// then there is no `intr` exit (docs/exit-model.md "Timing-dependent counts").
void ExpectBootCpuYielded(const SmpRun& run, bool kicked_in_guest) {
  const ExitStats& s = run.result.per_vcpu[0];
  EXPECT_EQ(s.hc_exits[MVMM_HC_sched_op], 1u);
  EXPECT_EQ(Reason(s, ExitReason::kIo), 1u);
  const uint64_t kicks = Reason(s, ExitReason::kIntr);
  if (kicked_in_guest) {
    EXPECT_EQ(kicks, 1u);
  } else {
    EXPECT_LE(kicks, 1u);
  }
  EXPECT_EQ(Total(s), 1u + kicks);
  EXPECT_FALSE(run.result.vcpu_stops[0].idle);
}

TEST_P(SmpStopTest, RequestStopFromAnotherThreadStopsEveryCpu) {
  REQUIRE_KVM();
  const uint32_t cpus = GetParam();
  StopWhenIdle idle;
  SmpRun run = RunSmp(
      TinyGuest("smp"), "w", cpus, absl::Seconds(60),
      [&idle](Vm& vm) {
        idle.all_idle.WaitForNotification();
        vm.RequestStop();
      },
      [&idle](const ExitEvent& e) { idle.See(e); });
  ASSERT_EQ(run.result.reason, StopReason::kStopRequested) << run.result.detail;
  EXPECT_EQ(run.result.stopped_by_vcpu, -1);
  ExpectBootCpuYielded(run, /*kicked_in_guest=*/false);
  for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
    EXPECT_EQ(run.result.vcpu_stops[cpu].reason, StopReason::kStopRequested);
    EXPECT_FALSE(run.result.vcpu_stops[cpu].with_vm);
  }
  for (uint32_t cpu = 1; cpu < cpus; ++cpu) ExpectIdleSecondary(run, cpu);
}

TEST_P(SmpStopTest, TimeoutWhileSecondaryCpusAreBlockedStopsEveryCpu) {
  REQUIRE_KVM();
  const uint32_t cpus = GetParam();
  StopWhenIdle idle;
  SmpRun run = RunSmp(TinyGuest("smp"), "w", cpus, absl::Seconds(2), nullptr,
                      [&idle](const ExitEvent& e) { idle.See(e); });
  ASSERT_EQ(run.result.reason, StopReason::kTimeout) << run.result.detail;
  EXPECT_EQ(run.result.stopped_by_vcpu, -1);
  ASSERT_TRUE(idle.all_idle.HasBeenNotified())
      << "the secondary CPUs did not block within the timeout";
  ExpectBootCpuYielded(run, /*kicked_in_guest=*/true);
  for (uint32_t cpu = 0; cpu < cpus; ++cpu)
    EXPECT_EQ(run.result.vcpu_stops[cpu].reason, StopReason::kTimeout);
  for (uint32_t cpu = 1; cpu < cpus; ++cpu) ExpectIdleSecondary(run, cpu);
}

INSTANTIATE_TEST_SUITE_P(Cpus, SmpStopTest, ::testing::Values(1u, 2u, 4u, 8u));

TEST(SmpConfigTest, CpuCountOutsideOneToMaxIsRefused) {
  REQUIRE_KVM();
  for (uint32_t cpus : {0u, MVMM_MAX_CPUS + 1, 1000u}) {
    VmConfig config;
    config.kernel_path = TinyGuest("smp");
    config.cpus = cpus;
    absl::StatusOr<std::unique_ptr<Vm>> vm = Vm::Create(config);
    ASSERT_FALSE(vm.ok());
    EXPECT_EQ(vm.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(vm.status().message().find("between 1 and 32"), std::string::npos);
  }
}

size_t Entries(const char* dir) {
  size_t n = 0;
  if (DIR* d = opendir(dir)) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

// Many short SMP lifecycles, each with a random CPU count and stop
// direction: each stops for the reason it was given, names the right vCPU,
// and no thread or file descriptor outlives its VM.
TEST(SmpStressTest, ShortLifecyclesStopEveryWayWithoutLeaks) {
  REQUIRE_KVM();
  std::mt19937 random(20240611);
  const size_t fds_before = Entries("/proc/self/fd");
  const size_t threads_before = Entries("/proc/self/task");
  for (int i = 0; i < 200; ++i) {
    const uint32_t cpus = std::uniform_int_distribution<uint32_t>(1, 8)(random);
    const int direction = std::uniform_int_distribution<int>(0, 3)(random);
    const int delay_us = std::uniform_int_distribution<int>(0, 3000)(random);
    SCOPED_TRACE(::testing::Message()
                 << "lifecycle " << i << ": " << cpus << " vCPUs, direction " << direction);
    switch (direction) {
      case 0: {
        SmpRun run = RunSmp(TinyGuest("smp"), "s", cpus);
        ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
        EXPECT_EQ(run.result.exit_code, static_cast<int>(cpus - 1));
        EXPECT_EQ(run.result.stopped_by_vcpu, 0);
        break;
      }
      case 1: {
        SmpRun run = RunSmp(TinyGuest("smp"), "f", cpus);
        ASSERT_EQ(run.result.reason, StopReason::kTripleFault) << run.result.detail;
        EXPECT_EQ(run.result.stopped_by_vcpu, static_cast<int>(cpus - 1));
        break;
      }
      case 2: {
        SmpRun run = RunSmp(TinyGuest("smp"), "w", cpus, absl::Seconds(60), [delay_us](Vm& vm) {
          std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
          vm.RequestStop();
        });
        ASSERT_EQ(run.result.reason, StopReason::kStopRequested) << run.result.detail;
        EXPECT_EQ(run.result.stopped_by_vcpu, -1);
        break;
      }
      case 3: {
        SmpRun run = RunSmp(TinyGuest("smp"), "w", cpus, absl::Microseconds(delay_us + 1));
        ASSERT_EQ(run.result.reason, StopReason::kTimeout) << run.result.detail;
        EXPECT_EQ(run.result.stopped_by_vcpu, -1);
        break;
      }
    }
  }
  EXPECT_EQ(Entries("/proc/self/fd"), fds_before);
  EXPECT_EQ(Entries("/proc/self/task"), threads_before);
}

}  // namespace
}  // namespace minivmm::testing
