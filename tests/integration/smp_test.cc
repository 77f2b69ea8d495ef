// Whole-VM tests with several vCPUs (docs/design.md "Several vCPUs"): every
// secondary CPU comes up and costs exactly the exits the exit model gives
// (docs/exit-model.md "Secondary CPUs"), CPU 0's exits are those of a
// one-CPU run, and a stop from any direction stops every vCPU and names the
// one that did it.
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
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
  }
  // The run's total is the per-vCPU counts added up (vmm/vm_run.cc), so it is
  // checked against the exit model instead: a one-CPU run plus each other
  // CPU's bring-up and block.
  EXPECT_EQ(Total(run.result.stats), Total(one.result.stats) + 3 * (cpus - 1));
}

INSTANTIATE_TEST_SUITE_P(Cpus, SmpKernelTest, ::testing::Values(1u, 2u, 4u, 8u));

// smp.S "s": CPU 0 shut down (one exit) once every other CPU was idle.
void ExpectShutdownByBootCpu(const SmpRun& run, uint32_t cpus) {
  const RunResult& r = run.result;
  ASSERT_EQ(r.reason, StopReason::kGuestShutdown) << r.detail;
  EXPECT_EQ(r.exit_code, static_cast<int>(cpus - 1));
  EXPECT_EQ(r.stopped_by_vcpu, 0);
  EXPECT_FALSE(r.vcpu_stops[0].with_vm);
  EXPECT_EQ(Total(r.per_vcpu[0]), 1u);  // the shutdown
  for (uint32_t cpu = 1; cpu < cpus; ++cpu) {
    ExpectIdleSecondary(run, cpu);
    EXPECT_TRUE(r.vcpu_stops[cpu].with_vm);
  }
}

// smp.S "f" or "S": the last CPU triple-faulted or shut down (one exit) once
// the CPUs between it and CPU 0 were idle; CPU 0, spinning in the guest, was
// kicked out by the stop (one exit).
void ExpectStopByLastCpu(const SmpRun& run, uint32_t cpus, bool fault) {
  const RunResult& r = run.result;
  const uint32_t last = cpus - 1;
  ASSERT_EQ(r.reason, fault ? StopReason::kTripleFault : StopReason::kGuestShutdown) << r.detail;
  if (!fault) {
    EXPECT_EQ(r.exit_code, static_cast<int>(cpus - 1));
  }
  EXPECT_EQ(r.stopped_by_vcpu, static_cast<int>(last));
  EXPECT_FALSE(r.vcpu_stops[last].with_vm);
  EXPECT_EQ(Total(r.per_vcpu[last]), 1u);
  if (fault) {
    EXPECT_EQ(Reason(r.per_vcpu[last], ExitReason::kShutdown), 1u);
  } else {
    EXPECT_EQ(r.per_vcpu[last].hc_exits[MVMM_HC_sched_op], 1u);
  }
  for (uint32_t cpu = 1; cpu < last; ++cpu) ExpectIdleSecondary(run, cpu);
  if (cpus > 1) {
    EXPECT_EQ(Reason(r.per_vcpu[0], ExitReason::kIntr), 1u);
    EXPECT_EQ(Total(r.per_vcpu[0]), 1u);
    EXPECT_TRUE(r.vcpu_stops[0].with_vm);
    EXPECT_FALSE(r.vcpu_stops[0].idle);
    EXPECT_EQ(r.vcpu_stops[0].reason, r.reason);
  }
}

class SmpStopTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(SmpStopTest, GuestShutdownFromTheBootCpuStopsEveryCpu) {
  REQUIRE_KVM();
  ExpectShutdownByBootCpu(RunSmp(TinyGuest("smp"), "s", GetParam()), GetParam());
}

TEST_P(SmpStopTest, TripleFaultOnTheLastCpuStopsEveryCpuAndNamesIt) {
  REQUIRE_KVM();
  ExpectStopByLastCpu(RunSmp(TinyGuest("smp"), "f", GetParam()), GetParam(), /*fault=*/true);
}

uint64_t Register(const RunResult& r, const std::string& name) {
  for (const auto& [n, v] : r.registers)
    if (n == name) return v;
  ADD_FAILURE() << "no register " << name;
  return 0;
}

// Each vCPU runs on a GDT and a TSS of its own (minivmm_abi/boot.h): the last
// CPU, which shuts the VM down in mode "S", saw its own GDT with sgdt (R15,
// R14), and KVM's state of it at the stop says the same, with TR on its own
// TSS. (Not mode "f": after a triple fault kvm_amd dumps a reset vCPU.)
TEST_P(SmpStopTest, TheLastCpuRunsOnItsOwnGdtAndTss) {
  REQUIRE_KVM();
  const SmpRun run = RunSmp(TinyGuest("smp"), "S", GetParam());
  const RunResult& r = run.result;
  const uint32_t last = GetParam() - 1;
  ASSERT_EQ(r.reason, StopReason::kGuestShutdown) << r.detail;
  ASSERT_EQ(r.stopped_by_vcpu, static_cast<int>(last));
  EXPECT_EQ(Register(r, "r15"), MVMM_CPU_GDT_GPA(last));  // the guest's sgdt
  EXPECT_EQ(Register(r, "r14"), MVMM_GDT_ENTRIES * 8 - 1);
  EXPECT_EQ(Register(r, "gdt_base"), MVMM_CPU_GDT_GPA(last));  // KVM's sregs
  EXPECT_EQ(Register(r, "gdt_limit"), MVMM_GDT_ENTRIES * 8 - 1);
  EXPECT_EQ(Register(r, "tr"), MVMM_SEL_TSS);
  EXPECT_EQ(Register(r, "tr_base"), MVMM_CPU_TSS_GPA(last));
  EXPECT_EQ((Register(r, "gdt_base") - MVMM_GDT_GPA) / MVMM_GDT_STRIDE, last);
}

TEST_P(SmpStopTest, GuestShutdownFromTheLastCpuStopsEveryCpuAndNamesIt) {
  REQUIRE_KVM();
  ExpectStopByLastCpu(RunSmp(TinyGuest("smp"), "S", GetParam()), GetParam(), /*fault=*/false);
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

size_t Mappings() {
  std::ifstream maps("/proc/self/maps");
  size_t n = 0;
  for (std::string line; std::getline(maps, line);) ++n;
  return n;
}

// How the stress test ends each lifecycle.
enum class Stop {
  kShutdownFromBootCpu,  // smp.S "s": CPU 0 shuts down once every other CPU is idle
  kShutdownFromLastCpu,  // smp.S "S": the last CPU shuts down, CPU 0 spins
  kTripleFault,          // smp.S "f": the last CPU faults, CPU 0 spins
  kRequestStop,          // Vm::RequestStop from another thread at a random time
  kSignal,               // SIGUSR1 to the process; its handler calls RequestStop
  kTimeout,              // VmConfig::timeout of a few microseconds to milliseconds
  kNeverRun,             // created (maybe asked to stop), destroyed without Run
  kCount
};
const char* StopName(Stop stop) {
  static constexpr const char* kNames[] = {"shutdown from CPU 0",
                                           "shutdown from the last CPU",
                                           "triple fault",
                                           "RequestStop",
                                           "signal",
                                           "timeout",
                                           "never ran"};
  return kNames[static_cast<int>(stop)];
}

// The lifecycles: always 1000 on the host's KVM. On the nested kvm_amd
// (scripts/nestkvm sets MINIVMM_NESTED), where every exit costs ~10x and the
// test command runs it under ThreadSanitizer too,
// MINIVMM_SMP_STRESS_LIFECYCLES if set (scripts/quickstart.sh sets it),
// else 1000.
int StressLifecycles() { return NestedCount("MINIVMM_SMP_STRESS_LIFECYCLES", 1000); }

// MINIVMM_SMP_STRESS_SEED replays a failed run; else a fresh seed.
uint64_t StressSeed() {
  uint64_t seed = 0;
  if (const char* env = std::getenv("MINIVMM_SMP_STRESS_SEED");
      env != nullptr && absl::SimpleAtoi(env, &seed))
    return seed;
  return (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
}

// Aborts the test process, saying which lifecycle hung, when one is not over
// within its bound: a hang fails at once instead of at ctest's timeout.
class Watchdog {
 public:
  Watchdog() : thread_([this] { Watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Arm(std::string what, absl::Duration bound) {
    std::lock_guard lock(mu_);
    what_ = std::move(what);
    deadline_ = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(bound);
    cv_.notify_all();
  }
  void Disarm() {
    std::lock_guard lock(mu_);
    deadline_.reset();
  }

 private:
  void Watch() {
    std::unique_lock lock(mu_);
    while (!done_) {
      if (!deadline_) {
        cv_.wait(lock);
      } else if (cv_.wait_until(lock, *deadline_) == std::cv_status::timeout && deadline_ &&
                 std::chrono::steady_clock::now() >= *deadline_) {
        std::fprintf(stderr, "SmpStressTest: %s did not end in time: hung\n", what_.c_str());
        std::abort();
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string what_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::thread thread_;
};

std::atomic<Vm*> g_signalled_vm{nullptr};
void StopOnSignal(int) {
  if (Vm* vm = g_signalled_vm.load()) vm->RequestStop();  // async-signal-safe
}

// Sends SIGUSR1 to the process from a thread that blocks it, so that another
// thread (a vCPU, the timer) takes it, as a Ctrl-C would.
void SignalTheProcess() {
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, nullptr);
  kill(getpid(), SIGUSR1);
}

// Each vCPU's exits as an exit observer saw them: a count kept apart from
// the run loop's stats (which the run's total adds up).
struct ObservedExits {
  std::array<std::atomic<uint64_t>, MVMM_MAX_CPUS> by_vcpu{};
  ExitObserver Observer() {
    return [this](const ExitEvent& e) {
      if (e.vcpu < by_vcpu.size()) by_vcpu[e.vcpu].fetch_add(1, std::memory_order_relaxed);
    };
  }
};

// The run of one stress lifecycle against what its stop must give.
void ExpectStressStop(const SmpRun& run, Stop how, uint32_t cpus, const ObservedExits& seen) {
  const RunResult& r = run.result;
  ASSERT_EQ(r.per_vcpu.size(), cpus);
  ASSERT_EQ(r.vcpu_stops.size(), cpus);
  uint64_t observed = 0;
  for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
    EXPECT_EQ(Total(r.per_vcpu[cpu]), seen.by_vcpu[cpu].load()) << "vCPU " << cpu;
    observed += seen.by_vcpu[cpu].load();
  }
  EXPECT_EQ(Total(r.stats), observed);
  switch (how) {
    case Stop::kShutdownFromBootCpu:
      ExpectShutdownByBootCpu(run, cpus);
      break;
    case Stop::kShutdownFromLastCpu:
    case Stop::kTripleFault:
      ExpectStopByLastCpu(run, cpus, how == Stop::kTripleFault);
      break;
    case Stop::kRequestStop:
    case Stop::kSignal:
    case Stop::kTimeout: {
      const StopReason want =
          how == Stop::kTimeout ? StopReason::kTimeout : StopReason::kStopRequested;
      ASSERT_EQ(r.reason, want) << r.detail;
      EXPECT_EQ(r.stopped_by_vcpu, -1);
      for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
        EXPECT_EQ(r.vcpu_stops[cpu].reason, want) << "vCPU " << cpu;
        EXPECT_FALSE(r.vcpu_stops[cpu].with_vm) << "vCPU " << cpu;
      }
      break;
    }
    case Stop::kNeverRun:
    case Stop::kCount:
      FAIL() << "not a run";
  }
}

// Many short SMP lifecycles, each with a random CPU count (1 to 8, and every
// tenth more than the host has cores) and a random stop: each stops for the
// reason it was given and names the right vCPU; none hangs (a watchdog
// bounds each); no thread, file descriptor or mapping outlives its VM (heap
// leaks are LeakSanitizer's, at the exit of this test under the asan preset). Seeded: the
// seed is in every failure message, and MINIVMM_SMP_STRESS_SEED replays it.
TEST(SmpStressTest, ShortLifecyclesStopEveryWayWithoutLeaks) {
  REQUIRE_KVM();
  const uint64_t seed = StressSeed();
  const int lifecycles = StressLifecycles();
  SCOPED_TRACE(::testing::Message() << "seed " << seed << " (MINIVMM_SMP_STRESS_SEED=" << seed
                                    << " replays it), " << lifecycles << " lifecycles");
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  std::mt19937_64 random(seed);
  const uint32_t host_cpus = std::max(1u, std::thread::hardware_concurrency());
  const uint32_t above_host = std::min<uint32_t>(host_cpus + 1, MVMM_MAX_CPUS);

  struct sigaction stop_on_signal {
  }, previous{};
  stop_on_signal.sa_handler = StopOnSignal;
  sigemptyset(&stop_on_signal.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &stop_on_signal, &previous), 0);
  Watchdog watchdog;

  // A few lifecycles first, up to the most vCPUs drawn: first-use
  // allocations (Abseil, libstdc++, KVM) and the C library's cache of thread
  // stacks.
  const uint32_t most_cpus = std::min(above_host + 8, 32u);
  for (uint32_t cpus : {1u, 2u, most_cpus, most_cpus, most_cpus})
    ASSERT_EQ(RunSmp(TinyGuest("smp"), "s", cpus).result.reason, StopReason::kGuestShutdown);
  const size_t fds_before = Entries("/proc/self/fd");
  const size_t threads_before = Entries("/proc/self/task");
  [[maybe_unused]] const size_t maps_before = Mappings();

  std::array<int, static_cast<int>(Stop::kCount)> stops{};
  int above_host_runs = 0;
  for (int i = 0; i < lifecycles; ++i) {
    const uint32_t cpus =
        i % 10 == 9 ? std::uniform_int_distribution<uint32_t>(above_host, most_cpus)(random)
                    : std::uniform_int_distribution<uint32_t>(1, 8)(random);
    // Every stop in turn, so that each is met even in a short run.
    const Stop how = static_cast<Stop>(i % static_cast<int>(Stop::kCount));
    const int delay_us = std::uniform_int_distribution<int>(0, 3000)(random);
    const std::string what = absl::StrFormat("lifecycle %d of %d (seed %u): %u vCPUs, %s, %d us", i,
                                             lifecycles, seed, cpus, StopName(how), delay_us);
    SCOPED_TRACE(what);
    ++stops[static_cast<int>(how)];
    if (cpus > host_cpus) ++above_host_runs;
    const absl::Duration timeout =
        how == Stop::kTimeout ? absl::Microseconds(delay_us + 1) : absl::Seconds(60);
    watchdog.Arm(what, timeout + absl::Seconds(60));

    if (how == Stop::kNeverRun) {
      VmConfig config;
      config.kernel_path = TinyGuest("smp");
      config.cpus = cpus;
      config.memory_bytes = 16ull << 20;
      absl::StatusOr<std::unique_ptr<Vm>> vm = Vm::Create(config);
      ASSERT_TRUE(vm.ok()) << vm.status();
      if (delay_us % 2 == 0) (*vm)->RequestStop();
    } else {
      const char* mode = how == Stop::kShutdownFromBootCpu   ? "s"
                         : how == Stop::kShutdownFromLastCpu ? "S"
                         : how == Stop::kTripleFault         ? "f"
                                                             : "w";
      std::function<void(Vm&)> during;
      if (how == Stop::kRequestStop || how == Stop::kSignal) {
        during = [how, delay_us](Vm& vm) {
          std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
          if (how == Stop::kRequestStop) {
            vm.RequestStop();
          } else {
            g_signalled_vm.store(&vm);
            SignalTheProcess();
          }
        };
      }
      ObservedExits seen;
      SmpRun run = RunSmp(TinyGuest("smp"), mode, cpus, timeout, during, seen.Observer());
      g_signalled_vm.store(nullptr);
      ExpectStressStop(run, how, cpus, seen);
    }
    watchdog.Disarm();
    if (::testing::Test::HasFailure()) break;
    // A leaked descriptor or thread shows at once; stop early rather than
    // exhaust a limit.
    if (i % 100 == 99) {
      ASSERT_EQ(Entries("/proc/self/fd"), fds_before) << "after " << i + 1 << " lifecycles";
      ASSERT_EQ(Entries("/proc/self/task"), threads_before) << "after " << i + 1 << " lifecycles";
    }
  }
  ASSERT_EQ(sigaction(SIGUSR1, &previous, nullptr), 0);

  EXPECT_EQ(Entries("/proc/self/fd"), fds_before) << "file descriptors leaked";
  EXPECT_EQ(Entries("/proc/self/task"), threads_before) << "threads leaked";
  // The sanitizers' runtimes map per-thread and allocator regions of their
  // own as they go; without one, the mappings must come back.
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
  EXPECT_LE(Mappings(), maps_before + 8) << "mappings leaked";
#endif
  for (int how = 0; how < static_cast<int>(Stop::kCount); ++how)
    EXPECT_GT(stops[how], 0) << StopName(static_cast<Stop>(how)) << " never drawn";
  if (lifecycles >= 10) {
    EXPECT_GT(above_host_runs, 0);
  }
}

}  // namespace
}  // namespace minivmm::testing
