#include "vmm/run/run_loop.h"

#include <sched.h>
#include <string.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <variant>

#include "absl/strings/str_format.h"
#include "hypercalls/hypercall_port.h"
#include "minivmm_abi/boot.h"

namespace minivmm {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

using MaybeStop = std::optional<RunStop>;

MaybeStop StopWith(StopReason reason, std::string detail) {
  return RunStop{reason, std::move(detail)};
}

}  // namespace

RunLoop::RunLoop(RunLoopParts parts)
    : p_(std::move(parts)), ctx_{p_.vcpu, control_, stats_}, env_{p_.hypercalls.memory,
                                                                  p_.hypercalls.gdt,
                                                                  ctx_,
                                                                  p_.hypercalls.console,
                                                                  p_.hypercalls.timer,
                                                                  p_.hypercalls.reports} {
  if (std::optional<BusMatch> port = p_.pio_bus.Find(MVMM_HYPERCALL_PORT, 4))
    hypercall_device_ = port->index;
  ctx_.vcpu_id = p_.vcpu_id;
  observed_ = p_.observer != nullptr && *p_.observer;
  if (p_.analyse_waste) {
    waste_.emplace(stats_);
    ctx_.waste = &*waste_;
  }
}

// Handle() with the exit shown to the observer, timed from the return of
// KVM_RUN to just before the next entry.
MaybeStop RunLoop::HandleObserved(const VcpuExit& exit) {
  event_ = ExitEvent{};
  event_.exit_ns = ExitClockNs();
  event_.sequence = sequence_++;
  event_.vcpu = p_.vcpu_id;
  Describe(exit, event_);
  // The guest reports an exit adds (a report hypercall's) are shown with it.
  GuestReports* reports = p_.hypercalls.reports;
  const size_t reports_before = reports != nullptr ? reports->entries.size() : 0;
  if (waste_)
    waste_->BeginExit(event_.sequence, (p_.signals.Raised() & VmSignals::kInterrupt) != 0);
  MaybeStop stop = Handle(exit, &event_);
  if (waste_) {
    waste_->EndExit();
    if (const std::optional<WasteReason> verdict = waste_->verdict())
      event_.wasted = WasteReasonName(*verdict);
    if (const std::optional<uint64_t> cancels = waste_->cancels())
      event_.cancels = static_cast<int64_t>(*cancels);
  }
  if (reports != nullptr && reports->entries.size() > reports_before)
    event_.reports = std::span(reports->entries).subspan(reports_before);
  event_.resume_ns = ExitClockNs();
  (*p_.observer)(event_);
  return stop;
}

MaybeStop RunLoop::HonourSignals(uint32_t raised) {
  if (raised & VmSignals::kStop) return StopWith(StopReason::kStopRequested, "stop requested");
  if (raised & VmSignals::kTimeout)
    return StopWith(StopReason::kTimeout, "the run's time limit elapsed");
  if (raised & VmSignals::kVmStopped) {
    RunStop stop{StopReason::kStopRequested, "another vCPU stopped the VM"};
    stop.vm_stopped = true;
    return stop;
  }
  // A pending timer interrupt: inject it now, or ask for an exit as soon as
  // the guest can take it.
  std::optional<GuestAddress> vcpu_info;
  if (control_.vcpu_info_gpa.has_value()) [[unlikely]] {
    // The shared-memory interrupt flag (minivmm_abi/boot.h): while the guest's
    // evtchn_upcall_mask is set, the interrupt waits and evtchn_upcall_pending
    // tells the guest so; its unmask sees the byte and calls
    // force_evtchn_callback, and this path runs again with the mask clear. No
    // interrupt-window request meanwhile: the mask, not IF, is what is closed.
    vcpu_info = GuestAddress(*control_.vcpu_info_gpa);
    const std::optional<std::array<uint8_t, 2>> bytes =
        p_.hypercalls.memory.ReadObj<std::array<uint8_t, 2>>(*vcpu_info);
    if (!bytes) return StopWith(StopReason::kVmmError, "the registered vcpu_info left guest RAM");
    static_assert(offsetof(mvmm_vcpu_info, evtchn_upcall_pending) == 0 &&
                  offsetof(mvmm_vcpu_info, evtchn_upcall_mask) == 1);
    if ((*bytes)[1] != 0) {
      if ((*bytes)[0] != 1 && !p_.hypercalls.memory.WriteObj(*vcpu_info, uint8_t{1}))
        return StopWith(StopReason::kVmmError, "the registered vcpu_info left guest RAM");
      p_.vcpu.RequestInterruptWindow(false);
      return std::nullopt;
    }
  }
  if (!p_.vcpu.ReadyForInterrupt()) {
    p_.vcpu.RequestInterruptWindow(true);
    return std::nullopt;
  }
  // Nothing is held back any more (the guest only reads this byte).
  if (vcpu_info && !p_.hypercalls.memory.WriteObj(*vcpu_info, uint8_t{0}))
    return StopWith(StopReason::kVmmError, "the registered vcpu_info left guest RAM");
  if (absl::Status s = p_.vcpu.InjectInterrupt(MVMM_TIMER_VECTOR); !s.ok())
    return StopWith(StopReason::kVmmError, s.ToString());
  p_.signals.Clear(VmSignals::kInterrupt);
  ++stats_.timer_injections;
  if (waste_) waste_->InterruptInjected();
  p_.vcpu.RequestInterruptWindow(false);
  return std::nullopt;
}

// Any exit but a hypercall.
MaybeStop RunLoop::HandleOther(const VcpuExit& exit) {
  if (const RunFailed* failed = std::get_if<RunFailed>(&exit))
    return StopWith(StopReason::kVmmError,
                    absl::StrFormat("KVM_RUN failed: %s", strerror(failed->error)));
  ++stats_.by_reason[static_cast<int>(ReasonOf(exit))];
  return std::visit(
      Overloaded{
          [&](const IoOut& io) -> MaybeStop {
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
          [&](const RunFailed&) -> MaybeStop { return std::nullopt; },  // handled above
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
      if (p_.big_lock != nullptr) p_.big_lock->unlock();
      sched_yield();
      if (p_.big_lock != nullptr) p_.big_lock->lock();
      return std::nullopt;
    case VcpuRequest::kBlock:
      return Block(/*from_hlt=*/false);
    case VcpuRequest::kNone:
      break;
  }
  return std::nullopt;
}

// HLT or sched_op(block): sleep until an interrupt is pending. A boot CPU
// that nothing can ever wake stops the run instead of hanging until
// --timeout; a secondary CPU (which no timer reaches) is idle and sleeps until
// the VM stops. Called holding the big lock when there is one; sleeps
// without it.
MaybeStop RunLoop::Block(bool from_hlt) {
  VmSignals& s = p_.signals;
  if (p_.vcpu_id == 0) {
    bool interrupts_on = (p_.vcpu.Get(Reg::kRflags) & MVMM_RFLAGS_IF) != 0;
    if (from_hlt && !interrupts_on)
      return StopWith(StopReason::kHaltedForever, "the guest halted with interrupts disabled");
    if (!(s.Raised() & VmSignals::kInterrupt) && !(p_.timer_can_fire && p_.timer_can_fire()))
      return StopWith(StopReason::kHaltedForever, from_hlt
                                                      ? "the guest halted with no timer armed"
                                                      : "the guest blocked with no timer armed");
  }
  const std::optional<GuestAddress> runstate =
      control_.runstate_gpa ? std::optional(GuestAddress(*control_.runstate_gpa)) : std::nullopt;
  static_assert(offsetof(mvmm_vcpu_runstate, state) == 0);
  if (runstate && !p_.hypercalls.memory.WriteObj(*runstate, uint32_t{MVMM_RUNSTATE_BLOCKED}))
    return StopWith(StopReason::kVmmError, "the registered runstate area left guest RAM");
  if (p_.big_lock != nullptr) p_.big_lock->unlock();
  {
    std::unique_lock lock(s.mu);
    // RequestStop() may not take the lock (it runs in signal handlers), so
    // poll its bit at a coarse interval.
    while (s.Raised() == 0) s.cv.wait_for(lock, std::chrono::milliseconds(50));
  }
  if (p_.big_lock != nullptr) p_.big_lock->lock();
  p_.vcpu.ClearKick();
  if (s.Raised() & VmSignals::kAnyStop) {
    idle_at_stop_ = true;
    return std::nullopt;  // the loop stops before the next entry
  }
  if (runstate && !p_.hypercalls.memory.WriteObj(*runstate, uint32_t{MVMM_RUNSTATE_RUNNING}))
    return StopWith(StopReason::kVmmError, "the registered runstate area left guest RAM");
  return std::nullopt;
}

// What the observer sees of any exit; the dispatcher adds a hypercall's
// number, arguments and result.
void RunLoop::Describe(const VcpuExit& exit, ExitEvent& event) {
  event.reason = ReasonOf(exit);
  std::visit(Overloaded{
                 [&](const IoOut& io) {
                   event.address = io.port;
                   event.is_write = true;
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
}

}  // namespace minivmm
