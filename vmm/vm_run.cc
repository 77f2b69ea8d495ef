// Vm::Run: binds the vCPU to the calling thread, starts the timer and the
// watchdog, runs the loop and collects the result.
#include <map>

#include "vmm/core/status_macros.h"
#include "vmm/run/run_loop.h"
#include "vmm/vm_state.h"

namespace minivmm {
namespace {

std::vector<HostCounter> Delta(const std::vector<std::pair<std::string, uint64_t>>& before,
                               const std::vector<std::pair<std::string, uint64_t>>& after) {
  std::map<std::string, uint64_t> start(before.begin(), before.end());
  std::vector<HostCounter> out;
  for (const auto& [name, value] : after) out.push_back({name, value - start[name]});
  return out;
}

}  // namespace

absl::StatusOr<RunResult> Vm::Run() {
  State& s = *state_;
  if (s.ran) return absl::FailedPreconditionError("Vm::Run may be called once per VM");
  s.ran = true;
  RETURN_IF_ERROR(s.vcpu->BindToCurrentThread());
  ASSIGN_OR_RETURN(auto host_before, s.vcpu->ReadStats());

  std::optional<VmTimer::Clock::duration> timeout;
  if (s.config.timeout != absl::InfiniteDuration())
    timeout = absl::ToChronoNanoseconds(s.config.timeout);
  absl::Time start = absl::Now();
  s.timer.Start(s.config.timer_hz, timeout);

  RunLoop loop(RunLoopParts{
      *s.vcpu, s.pio_bus, s.mmio_bus, s.signals, [&s] { return s.timer.CanFire(); },
      HypercallParts{s.dispatcher, s.memory, s.gdt_page.span(), &s.console, &s.timer, &s.reports},
      &s.observer, s.config.analyse_waste});
  RunStop stop = loop.LoopOn(*s.vcpu);
  // No timer may kick the thread once it is given back to the caller.
  s.timer.Stop();
  s.vcpu->UnbindFromThread();

  RunResult result;
  result.reason = stop.reason;
  result.exit_code = stop.exit_code;
  result.detail = stop.detail;
  result.elapsed = absl::Now() - start;
  result.per_vcpu = {loop.stats()};
  for (const ExitStats& v : result.per_vcpu) result.stats.Add(v);
  for (int i = 0; i < s.pio_bus.device_count(); ++i)
    result.pio_devices.emplace_back(s.pio_bus.DeviceName(i));
  for (int i = 0; i < s.mmio_bus.device_count(); ++i)
    result.mmio_devices.emplace_back(s.mmio_bus.DeviceName(i));
  for (uint32_t nr = 0; nr < MVMM_HC_MAX; ++nr)
    result.hypercall_names.emplace_back(s.dispatcher.Name(nr));
  if (auto host_after = s.vcpu->ReadStats(); host_after.ok())
    result.host_counters = Delta(host_before, *host_after);
  result.reports = s.reports;
  result.console_tail = s.console.Lines();
  result.registers = s.vcpu->DumpRegisters();
  result.guest_tsc_khz = s.vcpu->TscKhz();
  result.notes = s.gdt_trap.notes();
  result.notes.insert(result.notes.end(), loop.notes().begin(), loop.notes().end());
  return result;
}

}  // namespace minivmm
