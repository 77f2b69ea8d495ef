// Vm::Run: the vCPU run loop. Each exit is decoded once (KvmVcpu::Run),
// counted with plain increments, dispatched to one device or the hypercall
// dispatcher, and turned into "resume" or "stop".
#include <sched.h>

#include <chrono>
#include <map>
#include <variant>

#include "absl/strings/str_format.h"
#include "minivmm_abi/boot.h"
#include "vmm/internal/status_macros.h"
#include "vmm/vm_state.h"

namespace minivmm {
namespace {

struct Stop {
  StopReason reason;
  std::string detail;
  int exit_code = 0;
};

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

ExitReason ReasonOf(const VcpuExit& exit) {
  return std::visit(
      Overloaded{
          [](const IoIn&) { return ExitReason::kIo; },
          [](const IoOut&) { return ExitReason::kIo; },
          [](const MmioRead&) { return ExitReason::kMmio; },
          [](const MmioWrite&) { return ExitReason::kMmio; },
          [](const Hlt&) { return ExitReason::kHlt; },
          [](const IrqWindowOpen&) { return ExitReason::kIrqWindowOpen; },
          [](const Interrupted&) { return ExitReason::kIntr; },
          [](const Shutdown&) { return ExitReason::kShutdown; },
          [](const FailEntry&) { return ExitReason::kFailEntry; },
          [](const InternalError&) { return ExitReason::kInternalError; },
          [](const SystemEvent&) { return ExitReason::kSystemEvent; },
          [](const UnknownExit&) { return ExitReason::kUnknown; },
      },
      exit);
}

class RunLoop {
 public:
  explicit RunLoop(Vm::State& s) : s_(s), vcpu_(*s.vcpu), ctx_{vcpu_, control_, stats_} {}

  Stop Loop() {
    for (;;) {
      if (s_.stop_requested.load(std::memory_order_acquire))
        return {StopReason::kStopRequested, "stop requested"};
      if (s_.timed_out.load(std::memory_order_acquire))
        return {StopReason::kTimeout, "the run's time limit elapsed"};
      if (absl::Status st = InjectPendingInterrupt(); !st.ok()) return {StopReason::kVmmError, st.ToString()};
      absl::StatusOr<VcpuExit> exit = vcpu_.Run();
      if (!exit.ok()) return {StopReason::kVmmError, exit.status().ToString()};
      ExitReason reason = ReasonOf(*exit);
      ++stats_.by_reason[static_cast<int>(reason)];
      std::optional<Stop> stop = Handle(*exit);
      if (!stop && control_.request != VcpuRequest::kNone) stop = HonourRequest(*exit);
      if (s_.observer) Observe(*exit, reason);
      if (stop) return *stop;
    }
  }

  ExitStats& stats() { return stats_; }

 private:
  absl::Status InjectPendingInterrupt() {
    if (!s_.irq_pending.load(std::memory_order_acquire)) return absl::OkStatus();
    if (vcpu_.ReadyForInterrupt()) {
      RETURN_IF_ERROR(vcpu_.InjectInterrupt(MVMM_TIMER_VECTOR));
      s_.irq_pending.store(false, std::memory_order_release);
      ++stats_.timer_injections;
      vcpu_.RequestInterruptWindow(false);
    } else {
      vcpu_.RequestInterruptWindow(true);
    }
    return absl::OkStatus();
  }

  std::optional<Stop> Handle(const VcpuExit& exit) {
    return std::visit(
        Overloaded{
            [&](const IoOut& io) {
              if (s_.observer && io.port == MVMM_HYPERCALL_PORT) BeforeHypercall();
              return Pio(io.port, io.size, io.data), std::optional<Stop>();
            },
            [&](const IoIn& io) { return Pio(io.port, io.size, io.data), std::optional<Stop>(); },
            [&](const MmioWrite& m) { return Mmio(m.address, m.data), std::optional<Stop>(); },
            [&](const MmioRead& m) { return Mmio(m.address, m.data), std::optional<Stop>(); },
            [&](const Hlt&) { return Block(/*from_hlt=*/true); },
            [&](const IrqWindowOpen&) {
              // The guest set IF (sti or popf): on real KVM right after the
              // sti shadow, here at the emulator's batch boundary.
              stats_.CountCause(Cause::kIfSet, 1, 1);
              return std::optional<Stop>();
            },
            [&](const Interrupted&) {
              vcpu_.ClearKick();
              return std::optional<Stop>();
            },
            [&](const Shutdown&) {
              return std::optional<Stop>(Stop{StopReason::kTripleFault, "the guest triple-faulted"});
            },
            [&](const FailEntry& f) {
              return std::optional<Stop>(Stop{StopReason::kVmmError,
                  absl::StrFormat("KVM could not enter the guest (hardware reason 0x%x)", f.hardware_reason)});
            },
            [&](const InternalError& e) {
              return std::optional<Stop>(Stop{StopReason::kEmulationFailure,
                  absl::StrFormat("KVM could not emulate a guest instruction (suberror %u)", e.suberror)});
            },
            [&](const SystemEvent& e) {
              return std::optional<Stop>(Stop{StopReason::kVmmError,
                  absl::StrFormat("unexpected KVM system event %u", e.type)});
            },
            [&](const UnknownExit& u) {
              return std::optional<Stop>(Stop{StopReason::kVmmError,
                  absl::StrFormat("unexpected KVM exit reason %u", u.kvm_reason)});
            },
        },
        exit);
  }

  // One port access per element: a `rep outs` exit carries several.
  template <typename Span>
  void Pio(uint16_t port, uint8_t size, Span data) {
    for (size_t at = 0; size != 0 && at + size <= data.size(); at += size) {
      Span one = data.subspan(at, size);
      std::optional<BusMatch> m = s_.pio_bus.Find(port, size);
      if (!m) {
        ++stats_.pio_unclaimed;
        if constexpr (!std::is_const_v<typename Span::element_type>) {
          for (auto& b : one) b = 0xff;  // an empty ISA bus reads all ones
        }
        continue;
      }
      ++stats_.pio_by_device[m->index];
      if constexpr (std::is_const_v<typename Span::element_type>) {
        m->device->Write(m->offset, one, ctx_);
      } else {
        m->device->Read(m->offset, one, ctx_);
      }
    }
  }

  template <typename Span>
  void Mmio(uint64_t address, Span data) {
    std::optional<BusMatch> m = s_.mmio_bus.Find(address, data.size());
    if (!m) {
      ++stats_.mmio_unclaimed;
      if constexpr (!std::is_const_v<typename Span::element_type>) {
        for (auto& b : data) b = 0xff;
      }
      return;
    }
    ++stats_.mmio_by_device[m->index];
    if constexpr (std::is_const_v<typename Span::element_type>) {
      m->device->Write(m->offset, data, ctx_);
    } else {
      m->device->Read(m->offset, data, ctx_);
    }
  }

  std::optional<Stop> HonourRequest(const VcpuExit& exit) {
    VcpuRequest request = control_.request;
    control_.request = VcpuRequest::kNone;
    switch (request) {
      case VcpuRequest::kShutdown:
        return Stop{StopReason::kGuestShutdown,
                    absl::StrFormat("the guest shut down with code %d", control_.exit_code),
                    control_.exit_code};
      case VcpuRequest::kYield:
        sched_yield();
        return std::nullopt;
      case VcpuRequest::kBlock:
        return Block(/*from_hlt=*/false);
      case VcpuRequest::kNone:
        break;
    }
    return std::nullopt;
  }

  // HLT or sched_op(block): sleep until an interrupt is pending. A vCPU that
  // nothing can ever wake stops the run instead of hanging until --timeout.
  std::optional<Stop> Block(bool from_hlt) {
    bool interrupts_on = (vcpu_.Get(Reg::kRflags) & MVMM_RFLAGS_IF) != 0;
    if (from_hlt && !interrupts_on)
      return Stop{StopReason::kHaltedForever, "the guest halted with interrupts disabled"};
    if (!s_.irq_pending.load(std::memory_order_acquire) && !s_.timer.CanFire())
      return Stop{StopReason::kHaltedForever,
                  from_hlt ? "the guest halted with no timer armed" : "the guest blocked with no timer armed"};
    std::unique_lock lock(s_.wake_mu);
    s_.wake_cv.wait(lock, [&] {
      return s_.irq_pending.load(std::memory_order_acquire) ||
             s_.stop_requested.load(std::memory_order_acquire) ||
             s_.timed_out.load(std::memory_order_acquire);
    });
    vcpu_.ClearKick();
    return std::nullopt;
  }

  void Observe(const VcpuExit& exit, ExitReason reason) {
    ExitEvent event{};
    event.sequence = sequence_++;
    event.reason = reason;
    event.hypercall = -1;
    std::visit(Overloaded{
                   [&](const IoOut& io) {
                     event.address = io.port;
                     event.is_write = true;
                     if (io.port == MVMM_HYPERCALL_PORT) {
                       event.hypercall = last_nr_;
                       event.args = last_args_;
                       event.result = s_.hypercall_port.last_result();
                     }
                   },
                   [&](const IoIn& io) { event.address = io.port; },
                   [&](const MmioWrite& m) { event.address = m.address; event.is_write = true; },
                   [&](const MmioRead& m) { event.address = m.address; },
                   [](const auto&) {},
               },
               exit);
    s_.observer(event);
  }

  // Captures the hypercall's number and arguments before the handler
  // overwrites RAX; only when an observer wants them.
  void BeforeHypercall() {
    last_nr_ = static_cast<int64_t>(vcpu_.Get(Reg::kRax) & 0xffffffff);
    last_args_ = {vcpu_.Get(Reg::kRdi), vcpu_.Get(Reg::kRsi), vcpu_.Get(Reg::kRdx),
                  vcpu_.Get(Reg::kR10), vcpu_.Get(Reg::kR8)};
  }

  Vm::State& s_;
  KvmVcpu& vcpu_;
  ExitStats stats_;
  RunControl control_;
  ExitContext ctx_;
  uint64_t sequence_ = 0;
  int64_t last_nr_ = -1;
  HypercallArgs last_args_{};
};

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

  RunLoop loop(s);
  Stop stop = loop.Loop();

  RunResult result;
  result.reason = stop.reason;
  result.exit_code = stop.exit_code;
  result.detail = stop.detail;
  result.elapsed = absl::Now() - start;
  result.stats = loop.stats();
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
  result.registers = s.vcpu->DumpRegisters().values;
  result.notes = s.gdt_trap.notes();
  return result;
}

}  // namespace minivmm
