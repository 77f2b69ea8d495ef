#include "vmm/run/run_loop.h"

#include <sched.h>

#include <chrono>
#include <variant>

#include "absl/strings/str_format.h"
#include "minivmm_abi/boot.h"
#include "vmm/run/vm_devices.h"

namespace minivmm {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

// The exit reason of each VcpuExit alternative, by variant index.
constexpr ExitReason kReasonByIndex[] = {
    ExitReason::kIo,          ExitReason::kIo,
    ExitReason::kMmio,        ExitReason::kMmio,
    ExitReason::kHlt,         ExitReason::kIrqWindowOpen,
    ExitReason::kIntr,        ExitReason::kShutdown,
    ExitReason::kFailEntry,   ExitReason::kInternalError,
    ExitReason::kSystemEvent, ExitReason::kUnknown,
};
static_assert(std::size(kReasonByIndex) == std::variant_size_v<VcpuExit>);
static_assert(std::is_same_v<std::variant_alternative_t<1, VcpuExit>, IoOut>);
static_assert(std::is_same_v<std::variant_alternative_t<11, VcpuExit>, UnknownExit>);

ExitReason ReasonOf(const VcpuExit& exit) { return kReasonByIndex[exit.index()]; }

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

using MaybeStop = std::optional<RunStop>;

MaybeStop StopWith(StopReason reason, std::string detail) {
  return RunStop{reason, std::move(detail)};
}

}  // namespace

RunStop RunLoop::Loop() {
  for (;;) {
    if (p_.signals.stop_requested.load(std::memory_order_acquire))
      return {StopReason::kStopRequested, "stop requested"};
    if (p_.signals.timed_out.load(std::memory_order_acquire))
      return {StopReason::kTimeout, "the run's time limit elapsed"};
    if (absl::Status st = InjectPendingInterrupt(); !st.ok())
      return {StopReason::kVmmError, st.ToString()};
    absl::StatusOr<VcpuExit> exit = p_.vcpu.Run();
    // The exit's time, only for an observer (--trace): one branch otherwise.
    const bool observed = p_.observer != nullptr && *p_.observer;
    const int64_t exit_ns = observed ? NowNs() : 0;
    if (!exit.ok()) return {StopReason::kVmmError, exit.status().ToString()};
    ExitReason reason = ReasonOf(*exit);
    ++stats_.by_reason[static_cast<int>(reason)];
    MaybeStop stop = IsHypercall(*exit) ? Hypercall(std::get<IoOut>(*exit)) : Handle(*exit);
    if (!stop && control_.request != VcpuRequest::kNone) stop = HonourRequest();
    if (observed) Observe(*exit, reason, exit_ns);
    if (stop) return *stop;
  }
}

// A plain 4-byte `out` to the hypercall port, by far the most frequent exit:
// it takes a short path with the port's bus match looked up once, and is
// counted exactly as Access() would count it.
bool RunLoop::IsHypercall(const VcpuExit& exit) const {
  const IoOut* io = std::get_if<IoOut>(&exit);
  return io != nullptr && io->port == MVMM_HYPERCALL_PORT && io->size == 4 &&
         io->data.size() == 4 && hypercall_match_.has_value();
}

std::optional<RunStop> RunLoop::Hypercall(const IoOut& io) {
  if (p_.observer != nullptr && *p_.observer) BeforeHypercall();
  ++stats_.pio_by_device[hypercall_match_->index];
  hypercall_match_->device->Write(hypercall_match_->offset, io.data, ctx_);
  return std::nullopt;
}

absl::Status RunLoop::InjectPendingInterrupt() {
  if (!p_.signals.irq_pending.load(std::memory_order_acquire)) return absl::OkStatus();
  if (!p_.vcpu.ReadyForInterrupt()) {
    p_.vcpu.RequestInterruptWindow(true);
    return absl::OkStatus();
  }
  if (absl::Status s = p_.vcpu.InjectInterrupt(MVMM_TIMER_VECTOR); !s.ok()) return s;
  p_.signals.irq_pending.store(false, std::memory_order_release);
  ++stats_.timer_injections;
  p_.vcpu.RequestInterruptWindow(false);
  return absl::OkStatus();
}

MaybeStop RunLoop::Handle(const VcpuExit& exit) {
  return std::visit(
      Overloaded{
          [&](const IoOut& io) -> MaybeStop {
            if (io.port == MVMM_HYPERCALL_PORT && p_.observer != nullptr && *p_.observer)
              BeforeHypercall();
            Access(p_.pio_bus, io.port, io.size, io.data, true);
            return std::nullopt;
          },
          [&](const IoIn& io) -> MaybeStop {
            Access(p_.pio_bus, io.port, io.size, io.data, true);
            return std::nullopt;
          },
          [&](const MmioWrite& m) -> MaybeStop {
            Access(p_.mmio_bus, m.address, m.data.size(), m.data, false);
            return std::nullopt;
          },
          [&](const MmioRead& m) -> MaybeStop {
            Access(p_.mmio_bus, m.address, m.data.size(), m.data, false);
            return std::nullopt;
          },
          [&](const Hlt&) { return Block(/*from_hlt=*/true); },
          [&](const IrqWindowOpen&) -> MaybeStop {
            // The guest set IF (sti, popf or iretq): on real KVM right after
            // the sti shadow, on software backends at the emulator's batch
            // boundary, so this count is host-dependent.
            stats_.CountCause(Cause::kIfSet, 1, 1);
            return std::nullopt;
          },
          [&](const Interrupted&) -> MaybeStop {
            p_.vcpu.ClearKick();
            return std::nullopt;
          },
          [&](const Shutdown&) {
            return StopWith(StopReason::kTripleFault, "the guest triple-faulted");
          },
          [&](const FailEntry& f) {
            return StopWith(StopReason::kVmmError,
                            absl::StrFormat("KVM could not enter the guest (hardware reason 0x%x)",
                                            f.hardware_reason));
          },
          [&](const InternalError& e) {
            return StopWith(
                StopReason::kEmulationFailure,
                absl::StrFormat("KVM could not emulate a guest instruction (suberror %u)",
                                e.suberror));
          },
          [&](const SystemEvent& e) {
            return StopWith(StopReason::kVmmError,
                            absl::StrFormat("unexpected KVM system event %u", e.type));
          },
          [&](const UnknownExit& u) {
            return StopWith(StopReason::kVmmError,
                            absl::StrFormat("unexpected KVM exit reason %u", u.kvm_reason));
          },
      },
      exit);
}

// One bus access per element: a `rep outs`/`rep ins` exit carries several.
template <typename Span>
void RunLoop::Access(const Bus& bus, uint64_t address, uint8_t size, Span data, bool pio) {
  constexpr bool kWrite = std::is_const_v<typename Span::element_type>;
  auto& by_device = pio ? stats_.pio_by_device : stats_.mmio_by_device;
  for (size_t at = 0; size != 0 && at + size <= data.size(); at += size) {
    Span one = data.subspan(at, size);
    std::optional<BusMatch> m = bus.Find(address, size);
    if (!m) {
      ++(pio ? stats_.pio_unclaimed : stats_.mmio_unclaimed);
      if constexpr (!kWrite) {
        for (auto& b : one) b = 0xff;  // nothing there reads as all ones
      }
      continue;
    }
    ++by_device[m->index];
    if constexpr (kWrite) {
      m->device->Write(m->offset, one, ctx_);
    } else {
      m->device->Read(m->offset, one, ctx_);
    }
  }
}

MaybeStop RunLoop::HonourRequest() {
  VcpuRequest request = control_.request;
  control_.request = VcpuRequest::kNone;
  switch (request) {
    case VcpuRequest::kShutdown:
      return RunStop{StopReason::kGuestShutdown,
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
MaybeStop RunLoop::Block(bool from_hlt) {
  bool interrupts_on = (p_.vcpu.Get(Reg::kRflags) & MVMM_RFLAGS_IF) != 0;
  if (from_hlt && !interrupts_on)
    return StopWith(StopReason::kHaltedForever, "the guest halted with interrupts disabled");
  VmSignals& s = p_.signals;
  if (!s.irq_pending.load(std::memory_order_acquire) && !(p_.timer_can_fire && p_.timer_can_fire()))
    return StopWith(StopReason::kHaltedForever, from_hlt ? "the guest halted with no timer armed"
                                                         : "the guest blocked with no timer armed");
  std::unique_lock lock(s.mu);
  // RequestStop() may not take the lock (it runs in signal handlers), so
  // poll its flag at a coarse interval.
  while (!s.AnyWake()) s.cv.wait_for(lock, std::chrono::milliseconds(50));
  p_.vcpu.ClearKick();
  return std::nullopt;
}

void RunLoop::BeforeHypercall() {
  // Captured before the handler overwrites RAX; only when observed.
  last_nr_ = static_cast<int64_t>(p_.vcpu.Get(Reg::kRax) & 0xffffffff);
  last_args_ = {p_.vcpu.Get(Reg::kRdi), p_.vcpu.Get(Reg::kRsi), p_.vcpu.Get(Reg::kRdx),
                p_.vcpu.Get(Reg::kR10), p_.vcpu.Get(Reg::kR8)};
  reports_before_ = p_.reports != nullptr ? p_.reports->entries.size() : 0;
}

void RunLoop::Observe(const VcpuExit& exit, ExitReason reason, int64_t exit_ns) {
  ExitEvent event{};
  event.resume_ns = NowNs();
  event.exit_ns = exit_ns;
  event.sequence = sequence_++;
  event.reason = reason;
  event.hypercall = -1;
  std::visit(Overloaded{
                 [&](const IoOut& io) {
                   event.address = io.port;
                   event.is_write = true;
                   if (io.port == MVMM_HYPERCALL_PORT && p_.hypercall_port != nullptr) {
                     event.hypercall = last_nr_;
                     event.args = last_args_;
                     event.result = p_.hypercall_port->last_result();
                     if (p_.reports != nullptr && p_.reports->entries.size() > reports_before_)
                       event.reports = std::span(p_.reports->entries).subspan(reports_before_);
                   }
                 },
                 [&](const IoIn& io) { event.address = io.port; },
                 [&](const MmioWrite& m) {
                   event.address = m.address;
                   event.is_write = true;
                 },
                 [&](const MmioRead& m) { event.address = m.address; },
                 [](const auto&) {},
             },
             exit);
  (*p_.observer)(event);
}

}  // namespace minivmm
