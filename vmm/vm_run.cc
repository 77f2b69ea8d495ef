// Vm::Run: binds vCPU 0 to the calling thread and every other vCPU to a
// thread of its own, starts the timer and the watchdog, runs one loop per
// vCPU, stops them all when one stops, and collects the result.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/strings/str_format.h"
#include "vmm/core/status_macros.h"
#include "vmm/run/run_loop.h"
#include "vmm/vm_state.h"

namespace minivmm {
namespace {

using HostStats = std::vector<std::pair<std::string, uint64_t>>;

// Adds after - before of each counter into `sum`, which keeps the order in
// which counters first appear.
void AddDelta(const HostStats& before, const HostStats& after, std::vector<HostCounter>& sum) {
  std::map<std::string, uint64_t> start(before.begin(), before.end());
  for (const auto& [name, value] : after) {
    const uint64_t delta = value - start[name];
    auto it = std::find_if(sum.begin(), sum.end(),
                           [&name](const HostCounter& c) { return c.name == name; });
    if (it == sum.end()) {
      sum.push_back({name, delta});
    } else {
      it->delta += delta;
    }
  }
}

bool StoppedByHost(StopReason reason) {
  return reason == StopReason::kTimeout || reason == StopReason::kStopRequested;
}

// How many exits each vCPU's ring keeps (VmConfig::recent_exits).
uint32_t RecentExitsKept(const VmConfig& config) {
#ifdef NDEBUG
  return config.recent_exits.value_or(0);
#else
  return config.recent_exits.value_or(kDefaultRecentExits);
#endif
}

// One vCPU's part of the run.
struct VcpuRun {
  std::unique_ptr<RunLoop> loop;
  RunStop stop{StopReason::kVmmError, "the vCPU did not run"};
  HostStats host_before;
};

// A run loop per vCPU, each with its part of the VM; `directory` finds
// every vCPU's signals.
std::vector<VcpuRun> MakeRunLoops(Vm::State& s, VmCpus& directory) {
  const uint32_t cpus = static_cast<uint32_t>(s.vcpus.size());
  std::vector<VcpuRun> runs(cpus);
  for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
    runs[cpu].loop = std::make_unique<RunLoop>(RunLoopParts{
        *s.vcpus[cpu], s.pio_bus, s.mmio_bus, *s.signals[cpu],
        [&s](uint32_t vcpu) { return s.timer.CanFire(vcpu); },
        HypercallParts{s.dispatcher, s.memory, s.machine->gdt(), &s.console, &s.timer, &s.reports},
        &s.observer, s.config.analyse_waste, cpu, cpus > 1 ? &s.big_lock : nullptr, &directory,
        s.config.record_sites, s.machine->Identity(cpu), RecentExitsKept(s.config),
        s.machine->own_interrupts(), s.machine->hyperv_host(), s.machine->ioapic_eoi()});
  }
  return runs;
}

// What the run did, once every vCPU has stopped: how (vCPU `by` stopped
// first, or the host stopped them all), each vCPU's counts and stop, and
// what the VM kept (devices, hypercall names, reports, console, registers,
// recent exits).
RunResult CollectResult(Vm::State& s, const std::vector<VcpuRun>& runs, uint32_t by,
                        absl::Duration elapsed) {
  const uint32_t cpus = static_cast<uint32_t>(runs.size());
  RunResult result;
  const RunStop& stop = runs[by].stop;
  result.reason = stop.reason;
  result.exit_code = stop.exit_code;
  result.detail = stop.detail;
  result.stopped_by_vcpu = StoppedByHost(stop.reason) ? -1 : static_cast<int>(by);
  result.elapsed = elapsed;
  for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
    const VcpuRun& run = runs[cpu];
    VcpuStop& vcpu_stop = result.vcpu_stops.emplace_back();
    vcpu_stop.with_vm = run.stop.vm_stopped;
    vcpu_stop.reason = run.stop.vm_stopped ? stop.reason : run.stop.reason;
    vcpu_stop.detail =
        run.stop.vm_stopped ? absl::StrFormat("stopped with vCPU %u", by) : run.stop.detail;
    vcpu_stop.idle = run.loop->idle_at_stop();
    result.per_vcpu.push_back(run.loop->stats());
    result.stats.Add(run.loop->stats());
    if (s.config.record_sites) result.sites_per_vcpu.push_back(run.loop->sites());
    if (RecentExitsKept(s.config) > 0) result.recent_exits.push_back(run.loop->recent_exits());
    if (auto host_after = s.vcpus[cpu]->ReadStats(); host_after.ok())
      AddDelta(run.host_before, *host_after, result.host_counters);
  }
  for (int i = 0; i < s.pio_bus.device_count(); ++i)
    result.pio_devices.emplace_back(s.pio_bus.DeviceName(i));
  for (int i = 0; i < s.mmio_bus.device_count(); ++i)
    result.mmio_devices.emplace_back(s.mmio_bus.DeviceName(i));
  for (uint32_t nr = 0; nr < MVMM_HC_MAX; ++nr)
    result.hypercall_names.emplace_back(s.dispatcher.Name(nr));
  result.reports = s.reports;
  result.reports.on_record = nullptr;  // the VM's own hook, not the result's
  result.console_tail = s.console.Lines();
  result.registers =
      s.vcpus[result.stopped_by_vcpu < 0 ? 0 : result.stopped_by_vcpu]->DumpRegisters();
  result.guest_tsc_khz = s.vcpus[0]->TscKhz();
  result.notes = s.machine->notes();
  if (s.kernel_exits) {
    result.kernel_exits = s.kernel_exits->Counts();
    result.kernel_exit_phases = s.kernel_exits->Phases();
    result.kernel_exit_events = s.kernel_exits->Events();
    result.kernel_exit_reasons = s.kernel_exits->ReasonNames();
    result.kernel_exit_stacks = s.kernel_exits->stacks();
    result.kernel_exit_stack_list = s.kernel_exits->StackList();
    if (!s.kernel_exits->StacksMissing().empty())
      result.notes.push_back(s.kernel_exits->StacksMissing());
  }
  for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
    for (const std::string& note : runs[cpu].loop->notes())
      result.notes.push_back(cpu == 0 ? note : absl::StrFormat("vCPU %u: %s", cpu, note));
  }
  return result;
}

}  // namespace

absl::StatusOr<RunResult> Vm::Run() {
  State& s = *state_;
  if (s.ran) return absl::FailedPreconditionError("Vm::Run may be called once per VM");
  s.ran = true;
  const uint32_t cpus = static_cast<uint32_t>(s.vcpus.size());
  std::vector<VmSignals*> signals;
  for (const auto& one : s.signals) signals.push_back(one.get());
  VmCpus directory(std::move(signals));
  std::vector<VcpuRun> runs = MakeRunLoops(s, directory);
  RETURN_IF_ERROR(s.vcpus[0]->BindToCurrentThread());
  if (s.kernel_exits) RETURN_IF_ERROR(s.kernel_exits->AttachCurrentThread(0));
  ASSIGN_OR_RETURN(runs[0].host_before, s.vcpus[0]->ReadStats());

  // The first vCPU to stop by itself stops the others. A timeout or stop
  // request reaches every vCPU by itself: a vCPU that saw one passes nothing
  // on, or a vCPU that had not seen it yet would say it was stopped with the
  // VM by that vCPU rather than by the host.
  std::mutex stop_mu;
  std::optional<uint32_t> first_stop;
  auto stopped = [&](uint32_t cpu) {
    if (runs[cpu].stop.vm_stopped || StoppedByHost(runs[cpu].stop.reason)) return;
    {
      std::lock_guard lock(stop_mu);
      if (first_stop) return;
      first_stop = cpu;
    }
    for (uint32_t other = 0; other < cpus; ++other)
      if (other != cpu) s.signals[other]->VmStopped();
  };

  std::optional<VmTimer::Clock::duration> timeout;
  if (s.config.timeout != absl::InfiniteDuration())
    timeout = absl::ToChronoNanoseconds(s.config.timeout);
  absl::Time start = absl::Now();
  s.timer.Start(s.config.timer_hz, timeout);

  std::vector<std::thread> threads;
  for (uint32_t cpu = 1; cpu < cpus; ++cpu) {
    threads.emplace_back([&s, &runs, &stopped, cpu] {
      KvmVcpu& vcpu = *s.vcpus[cpu];
      VcpuRun& run = runs[cpu];
      absl::Status bound = vcpu.BindToCurrentThread();
      if (bound.ok() && s.kernel_exits) bound = s.kernel_exits->AttachCurrentThread(cpu);
      if (!bound.ok()) {
        run.stop = RunStop{StopReason::kVmmError, bound.ToString()};
      } else {
        run.host_before = vcpu.ReadStats().value_or(HostStats{});
        run.stop = run.loop->LoopOn(vcpu);
        vcpu.UnbindFromThread();
      }
      stopped(cpu);
    });
  }
  // The tracepoint's rings are read while the run goes on, so that none
  // overflows (kvm_exit_trace.h), and once more at the end.
  std::atomic<bool> running{true};
  std::thread drain;
  if (s.kernel_exits) {
    drain = std::thread([&s, &running] {
      while (running.load(std::memory_order_acquire)) {
        s.kernel_exits->Drain();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  runs[0].stop = runs[0].loop->LoopOn(*s.vcpus[0]);
  stopped(0);
  for (std::thread& t : threads) t.join();
  running.store(false, std::memory_order_release);
  if (drain.joinable()) drain.join();
  // No timer may kick the thread once it is given back to the caller.
  s.timer.Stop();
  s.vcpus[0]->UnbindFromThread();

  return CollectResult(s, runs, first_stop.value_or(0), absl::Now() - start);
}

}  // namespace minivmm
