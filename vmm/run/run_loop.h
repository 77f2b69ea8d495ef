// The vCPU run loop. Each exit is decoded once (Vcpu::Run); a hypercall (a
// 4-byte `out` to MVMM_HYPERCALL_PORT) goes straight to the dispatcher, any
// other exit to one device or its own case; each is counted with plain
// increments and turned into "resume" or "stop". Independent of KVM: tests
// drive it with a scripted Vcpu.
#ifndef MINIVMM_VMM_RUN_RUN_LOOP_H_
#define MINIVMM_VMM_RUN_RUN_LOOP_H_

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hypercalls/dispatcher.h"
#include "minivmm/exit_event.h"
#include "minivmm/hypercall_env.h"
#include "minivmm/run_result.h"
#include "vmm/bus/bus.h"
#include "vmm/core/vcpu.h"
#include "vmm/run/vm_signals.h"

namespace minivmm {

struct RunStop {
  StopReason reason;
  std::string detail;
  int exit_code = 0;
};

// What the hypercall handlers reach besides the exiting vCPU (HypercallEnv).
struct HypercallParts {
  const Dispatcher& dispatcher;
  const GuestMemory& memory;
  std::span<uint8_t> gdt;
  ConsoleSink* console = nullptr;
  TimerControl* timer = nullptr;
  GuestReports* reports = nullptr;
};

struct RunLoopParts {
  Vcpu& vcpu;
  const Bus& pio_bus;
  const Bus& mmio_bus;
  VmSignals& signals;
  // True while a timer could still raise an interrupt (periodic or armed).
  std::function<bool()> timer_can_fire;
  HypercallParts hypercalls;
  const ExitObserver* observer = nullptr;  // null or empty: none
};

class RunLoop {
 public:
  explicit RunLoop(RunLoopParts parts);

  // Runs until the guest stops; see StopReason.
  RunStop Loop();

  const ExitStats& stats() const { return stats_; }
  // The first refusal of each kind of hypercall, one line each.
  const std::vector<std::string>& notes() const { return refusals_.lines(); }

 private:
  std::optional<RunStop> HonourSignals(uint32_t raised);
  std::optional<RunStop> Handle(const VcpuExit& exit, ExitEvent* event);
  std::optional<RunStop> HandleObserved(const VcpuExit& exit);
  std::optional<RunStop> HandleOther(const VcpuExit& exit);
  template <typename Span>
  void Access(const Bus& bus, uint64_t address, uint8_t size, Span data, bool pio);
  std::optional<RunStop> HonourRequest();
  std::optional<RunStop> Block(bool from_hlt);
  static void Describe(const VcpuExit& exit, ExitEvent& event);

  RunLoopParts p_;
  ExitStats stats_;
  RunControl control_;
  ExitContext ctx_;
  HypercallEnv env_;
  RefusalNotes refusals_;
  ExitEvent event_;  // the exit being observed, when an observer is set
  // The port bus's index of the hypercall port, for pio_by_device; -1 when
  // no device claims it (then hypercalls are not counted per device).
  int hypercall_device_ = -1;
  uint64_t sequence_ = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_RUN_RUN_LOOP_H_
