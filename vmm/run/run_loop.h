// The vCPU run loop. Each exit is decoded once (Vcpu::Run), counted with
// plain increments, dispatched to one device or the hypercall dispatcher,
// and turned into "resume" or "stop". Independent of KVM: tests drive it with
// a scripted Vcpu.
#ifndef MINIVMM_VMM_RUN_RUN_LOOP_H_
#define MINIVMM_VMM_RUN_RUN_LOOP_H_

#include <functional>
#include <optional>
#include <string>

#include "hypercalls/hypercall_env.h"
#include "minivmm_abi/hypercall.h"
#include "vmm/bus/bus.h"
#include "vmm/core/exit_context.h"
#include "vmm/core/vcpu.h"
#include "vmm/run/vm_signals.h"
#include "vmm/run_result.h"
#include "vmm/vm.h"

namespace minivmm {

class HypercallPort;

struct RunStop {
  StopReason reason;
  std::string detail;
  int exit_code = 0;
};

struct RunLoopParts {
  Vcpu& vcpu;
  const Bus& pio_bus;
  const Bus& mmio_bus;
  VmSignals& signals;
  // True while a timer could still raise an interrupt (periodic or armed).
  std::function<bool()> timer_can_fire;
  const HypercallPort* hypercall_port = nullptr;  // for the observer's results
  const Vm::ExitObserver* observer = nullptr;     // null or empty: none
  const GuestReports* reports = nullptr;          // for the observer's report entries
};

class RunLoop {
 public:
  explicit RunLoop(RunLoopParts parts)
      : p_(std::move(parts)),
        ctx_{p_.vcpu, control_, stats_},
        hypercall_match_(p_.pio_bus.Find(MVMM_HYPERCALL_PORT, 4)) {}

  // Runs until the guest stops; see StopReason.
  RunStop Loop();

  const ExitStats& stats() const { return stats_; }

 private:
  absl::Status InjectPendingInterrupt();
  std::optional<RunStop> Handle(const VcpuExit& exit);
  bool IsHypercall(const VcpuExit& exit) const;
  std::optional<RunStop> Hypercall(const IoOut& io);
  template <typename Span>
  void Access(const Bus& bus, uint64_t address, uint8_t size, Span data, bool pio);
  std::optional<RunStop> HonourRequest();
  std::optional<RunStop> Block(bool from_hlt);
  void BeforeHypercall();
  void Observe(const VcpuExit& exit, ExitReason reason, int64_t exit_ns);

  RunLoopParts p_;
  ExitStats stats_;
  RunControl control_;
  ExitContext ctx_;
  uint64_t sequence_ = 0;
  int64_t last_nr_ = -1;
  HypercallArgs last_args_{};
  size_t reports_before_ = 0;                // report entries before the observed hypercall
  std::optional<BusMatch> hypercall_match_;  // the hypercall port, looked up once
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_RUN_RUN_LOOP_H_
