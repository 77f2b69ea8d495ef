#include "vmm/run/run_loop.h"

#include <sched.h>
#include <string.h>

#include <array>
#include <chrono>
#include <cstdio>
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

// A loop tested on its own: vCPU `vcpu_id` among `vcpu_id + 1`, the others
// out of reach.
std::optional<VmCpus> OwnCpus(const RunLoopParts& parts) {
  if (parts.cpus != nullptr) return std::nullopt;
  std::vector<VmSignals*> signals(parts.vcpu_id + 1, nullptr);
  signals[parts.vcpu_id] = &parts.signals;
  return VmCpus(std::move(signals));
}

}  // namespace

RunLoop::RunLoop(RunLoopParts parts)
    : p_(std::move(parts)),
      own_cpus_(OwnCpus(p_)),
      cpus_(own_cpus_ ? &*own_cpus_ : p_.cpus),
      ctx_{p_.vcpu, control_, stats_},
      env_{p_.hypercalls.memory, p_.hypercalls.gdt,     ctx_, p_.hypercalls.console,
           p_.hypercalls.timer,  p_.hypercalls.reports, cpus_} {
  if (std::optional<BusMatch> port = p_.pio_bus.Find(MVMM_HYPERCALL_PORT, 4))
    hypercall_device_ = port->index;
  ctx_.vcpu_id = p_.vcpu_id;
  cpus_->Attach(p_.vcpu_id, &control_);
  observed_ = p_.observer != nullptr && *p_.observer;
  if (p_.analyse_waste) {
    waste_.emplace(stats_);
    ctx_.waste = &*waste_;
  }
  if (p_.record_sites)
    sites_ = std::make_unique<SiteRecorder>(p_.hypercalls.memory, stats_, p_.vcpu);
  if (p_.recent_exits > 0) recent_ = std::make_unique<RecentExitRing>(p_.recent_exits);
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
    waste_->BeginExit(event_.sequence, (p_.signals.Raised() & VmSignals::kAnyInterrupt) != 0);
  MaybeStop stop = Handle(exit, &event_);
  if (waste_) {
    waste_->EndExit();
    if (const std::optional<WasteReason> verdict = waste_->verdict())
      event_.wasted = WasteReasonName(*verdict);
    if (const std::optional<uint64_t> cancels = waste_->cancels())
      event_.cancels = static_cast<int64_t>(*cancels);
  }
  // The site as SiteRecorder::End will count it (LoopWith's kSites brackets
  // this call with Begin and End).
  if (sites_ && !std::holds_alternative<RunFailed>(exit)) event_.site = &sites_->Settle();
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
  // A pending interrupt: the rule (vmm/core/interrupt_rule.h) says inject
  // which now, ask for an exit as soon as the guest can take it, or hold it
  // back behind the shared-memory mask; this carries the decision out.
  InterruptInputs in{.vcpu = p_.vcpu.InterruptState(),
                     .ipi_pending = (raised & VmSignals::kIpi) != 0,
                     .timer_pending = (raised & VmSignals::kInterrupt) != 0};
  std::optional<GuestAddress> vcpu_info;
  std::array<uint8_t, 2> upcall{};  // evtchn_upcall_pending, evtchn_upcall_mask
  if (control_.vcpu_info_gpa.has_value()) [[unlikely]] {
    // The shared-memory interrupt flag (minivmm_abi/boot.h): while the guest's
    // evtchn_upcall_mask is set, the interrupt waits and evtchn_upcall_pending
    // tells the guest so; its unmask sees the byte and calls
    // force_evtchn_callback, and this path runs again with the mask clear.
    vcpu_info = GuestAddress(*control_.vcpu_info_gpa);
    const std::optional<std::array<uint8_t, 2>> bytes =
        p_.hypercalls.memory.ReadObj<std::array<uint8_t, 2>>(*vcpu_info);
    if (!bytes) return StopWith(StopReason::kVmmError, "the registered vcpu_info left guest RAM");
    static_assert(offsetof(mvmm_vcpu_info, evtchn_upcall_pending) == 0 &&
                  offsetof(mvmm_vcpu_info, evtchn_upcall_mask) == 1);
    upcall = *bytes;
    in.mask = upcall[1] != 0 ? UpcallMask::kSet : UpcallMask::kClear;
  }
  const InterruptDecision d = DecideInterrupt(in);
  switch (d.action) {
    case InterruptDecision::Action::kNothing:
      return std::nullopt;
    case InterruptDecision::Action::kHoldBack:
      if (upcall[0] != 1 && !p_.hypercalls.memory.WriteObj(*vcpu_info, uint8_t{1}))
        return StopWith(StopReason::kVmmError, "the registered vcpu_info left guest RAM");
      p_.vcpu.RequestInterruptWindow(false);
      return std::nullopt;
    case InterruptDecision::Action::kRequestWindow:
      p_.vcpu.RequestInterruptWindow(true);
      return std::nullopt;
    case InterruptDecision::Action::kInject:
      break;
  }
  // Nothing is held back any more (the guest only reads this byte).
  if (vcpu_info && !p_.hypercalls.memory.WriteObj(*vcpu_info, uint8_t{0}))
    return StopWith(StopReason::kVmmError, "the registered vcpu_info left guest RAM");
  if (absl::Status s = p_.vcpu.InjectInterrupt(d.vector); !s.ok())
    return StopWith(StopReason::kVmmError, s.ToString());
  const bool ipi = d.vector == MVMM_IPI_VECTOR;
  if (recent_) recent_->Injected(static_cast<uint8_t>(d.vector));
  p_.signals.Clear(ipi ? VmSignals::kIpi : VmSignals::kInterrupt);
  ++(ipi ? stats_.ipi_injections : stats_.timer_injections);
  if (waste_) waste_->InterruptInjected();
  // A timer interrupt pending behind the IPI: an exit as soon as the
  // handler's iretq lets it in.
  p_.vcpu.RequestInterruptWindow(d.window_after);
  return std::nullopt;
}

// A hypercall exit on a vCPU whose GDT base or TR is not what the VMM gave
// it (RunLoopParts::identity): counted, and told once on stderr.
void RunLoop::IdentityMismatch(const VcpuIdentity& found) {
  ++stats_.identity_mismatches;
  if (identity_reported_) return;
  identity_reported_ = true;
  const VcpuIdentity& want = *p_.identity;
  std::fprintf(stderr,
               "minivmm: vCPU %u at a hypercall (rip 0x%llx, cpl %d) runs on GDT base 0x%llx, TR "
               "0x%x base 0x%llx; the VMM gave it GDT base 0x%llx, TR 0x%x base 0x%llx (reported "
               "once; counted in identity_mismatches)\n",
               p_.vcpu_id, static_cast<unsigned long long>(p_.vcpu.Get(Reg::kRip)),
               p_.vcpu.Cpl(), static_cast<unsigned long long>(found.gdt_base),
               found.tr_selector, static_cast<unsigned long long>(found.tr_base),
               static_cast<unsigned long long>(want.gdt_base), want.tr_selector,
               static_cast<unsigned long long>(want.tr_base));
}

// A HLT or interrupt-window exit on a machine whose interrupts are KVM's
// (RunLoopParts::own_interrupts): the VMM's HLT and injection paths do not
// belong to that model, so the run stops rather than misbehave.
MaybeStop RunLoop::ForeignInterruptExit(std::string_view what) {
  return StopWith(StopReason::kVmmError,
                  absl::StrFormat("%s exit reached minivmm on a machine whose interrupt "
                                  "controllers are KVM's, which handle it in the kernel",
                                  what));
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
          [&](const Hlt&) -> MaybeStop {
            if (!p_.own_interrupts) [[unlikely]]
              return ForeignInterruptExit("HLT");
            return Block(/*from_hlt=*/true);
          },
          [&](const IrqWindowOpen&) -> MaybeStop {
            if (!p_.own_interrupts) [[unlikely]]
              return ForeignInterruptExit("an interrupt window");
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
          [&](const HypervExit& h) -> MaybeStop {
            // SynIC and the synthetic debugger live in the kernel; the
            // machine's HypervHost keeps what it needs of a SynIC control
            // write and answers a hypercall KVM did not handle. Without one,
            // no device here serves a hypercall:
            // HV_STATUS_INVALID_HYPERCALL_CODE, as QEMU answers without one.
            if (h.synic != nullptr && p_.hyperv != nullptr)
              p_.hyperv->SynicControlWritten(p_.vcpu_id, *h.synic);
            if (h.hcall != nullptr)
              h.hcall->result = p_.hyperv != nullptr ? p_.hyperv->Hypercall(p_.vcpu_id, *h.hcall)
                                                     : kHvStatusInvalidHypercallCode;
            return std::nullopt;
          },
          [&](const IoapicEoi& e) -> MaybeStop {
            if (p_.ioapic_eoi == nullptr) [[unlikely]]
              return StopWith(StopReason::kVmmError,
                              "an IOAPIC EOI exit reached minivmm on a machine whose IOAPIC is "
                              "KVM's or absent");
            p_.ioapic_eoi->IoapicEoi(e.vector);
            return std::nullopt;
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
    case VcpuRequest::kLockWait:
      return LockWait();
    case VcpuRequest::kSuspend:
      return Suspend();
    case VcpuRequest::kNone:
      break;
  }
  return std::nullopt;
}

// Sleeps on the VM's signals, without the big lock, until `woken()` or
// `until`. RequestStop() may not take the signals' lock (it runs in signal
// handlers), so the condition is polled at a coarse interval too.
void RunLoop::SleepWithoutBigLock(const std::function<bool()>& woken,
                                  std::chrono::steady_clock::time_point until) {
  VmSignals& s = p_.signals;
  if (p_.big_lock != nullptr) p_.big_lock->unlock();
  {
    std::unique_lock lock(s.mu);
    while (!woken()) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= until) break;
      s.cv.wait_until(lock, std::min(until, now + std::chrono::milliseconds(50)));
    }
  }
  if (p_.big_lock != nullptr) p_.big_lock->lock();
}

// HLT, sched_op(block) or lock_wait: sleep until an interrupt is pending
// (lock_wait: or a kick; a HLT with IF=0: until the VM stops, since no
// interrupt can end it). When this vCPU would sleep while every other vCPU
// sleeps too and nothing can wake any of them (no interrupt or kick pending,
// no timer that could fire), the run stops with kHaltedForever instead of
// hanging until --timeout. Called holding the big lock when there is one,
// which the sleep state is marked under (so that flush_tlb_others sees this
// vCPU blocked, and lock_kick's kick cannot fall between the check and the
// sleep, from here on); sleeps without it.
MaybeStop RunLoop::Block(bool from_hlt, bool lock_wait) {
  VmSignals& s = p_.signals;
  const bool interrupts_on = (p_.vcpu.Get(Reg::kRflags) & MVMM_RFLAGS_IF) != 0;
  const bool halted = from_hlt && !interrupts_on;
  cpus_->SetSleep(p_.vcpu_id, lock_wait ? VmCpus::Sleep::kLockWait
                              : halted  ? VmCpus::Sleep::kHalted
                                        : VmCpus::Sleep::kBlocked);
  if (cpus_->NothingCanWakeAny(p_.timer_can_fire)) {
    cpus_->SetSleep(p_.vcpu_id, VmCpus::Sleep::kAwake);
    return StopWith(StopReason::kHaltedForever, HaltedForeverDetail(from_hlt, halted, lock_wait));
  }
  // The registered run-state area, if any (a plain address and a flag: GCC
  // warns, wrongly, of an optional's payload read uninitialised).
  const bool has_runstate = control_.runstate_gpa.has_value();
  const GuestAddress runstate(control_.runstate_gpa.value_or(0));
  static_assert(offsetof(mvmm_vcpu_runstate, state) == 0);
  if (has_runstate && !p_.hypercalls.memory.WriteObj(runstate, uint32_t{MVMM_RUNSTATE_BLOCKED})) {
    cpus_->SetSleep(p_.vcpu_id, VmCpus::Sleep::kAwake);
    return StopWith(StopReason::kVmmError, "the registered runstate area left guest RAM");
  }
  const uint32_t wakes = VmSignals::kAnyStop | (halted ? 0 : VmSignals::kAnyInterrupt);
  SleepWithoutBigLock([&] {
    return (s.Raised() & wakes) != 0 ||
           (lock_wait && s.lock_kicked.load(std::memory_order_acquire));
  });
  cpus_->SetSleep(p_.vcpu_id, VmCpus::Sleep::kAwake);
  p_.vcpu.ClearKick();
  if (s.Raised() & VmSignals::kAnyStop) {
    idle_at_stop_ = true;
    return std::nullopt;  // the loop stops before the next entry
  }
  if (has_runstate && !p_.hypercalls.memory.WriteObj(runstate, uint32_t{MVMM_RUNSTATE_RUNNING}))
    return StopWith(StopReason::kVmmError, "the registered runstate area left guest RAM");
  return std::nullopt;
}

// ACPI S3 (VcpuRequest::kSuspend, the PC machine's PM1 control): the vCPU
// sleeps, without the big lock, until the machine's wake event is due or the
// run stops; then the machine's resume path brings it back (vmm/machine/
// pc_machine.cc). A one-vCPU machine only: suspending several would need
// every other vCPU stopped and put back in reset, which minivmm does not
// model; the run stops with that said. No wake event enabled: the machine
// would sleep forever, so the run stops as halted forever.
MaybeStop RunLoop::Suspend() {
  const std::optional<uint64_t> wake_at = control_.wake_at_ns;
  std::function<absl::Status()> resume = std::move(control_.resume);
  control_.wake_at_ns.reset();
  control_.resume = nullptr;
  if (cpus_->count() > 1)
    return StopWith(StopReason::kVmmError,
                    absl::StrFormat("vCPU %u put the machine in ACPI S3 with %u vCPUs: minivmm "
                                    "suspends a one-vCPU machine only",
                                    p_.vcpu_id, cpus_->count()));
  if (!wake_at || !resume)
    return StopWith(StopReason::kHaltedForever,
                    "the guest entered ACPI S3 with no wake event enabled (PM1_EN.RTC_EN and "
                    "the RTC's alarm, register B's AIE)");
  VmSignals& s = p_.signals;
  const auto due = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(*wake_at));
  SleepWithoutBigLock([&] { return (s.Raised() & VmSignals::kAnyStop) != 0; }, due);
  if (s.Raised() & VmSignals::kAnyStop) {
    idle_at_stop_ = true;
    return std::nullopt;  // the loop stops before the next entry
  }
  if (absl::Status resumed = resume(); !resumed.ok())
    return StopWith(StopReason::kVmmError, std::string(resumed.message()));
  return std::nullopt;
}

// lock_wait after its handler found the lock word unchanged, still under the
// big lock: a pending kick is consumed (KICKED), a pending interrupt returns
// at once (INTERRUPT), else the vCPU sleeps until either arrives (a kick wins
// when both have). The outcome goes into RAX, and into the observed event.
MaybeStop RunLoop::LockWait() {
  VmSignals& s = p_.signals;
  int64_t result = MVMM_LOCK_WAIT_INTERRUPT;
  if (s.TakeLockKick()) {
    result = MVMM_LOCK_WAIT_KICKED;
  } else if ((s.Raised() & VmSignals::kAnyInterrupt) == 0) {
    ++stats_.lock_waits_slept;
    if (MaybeStop stop = Block(/*from_hlt=*/false, /*lock_wait=*/true)) return stop;
    if (s.Raised() & VmSignals::kAnyStop) return std::nullopt;  // stops before the next entry
    if (s.TakeLockKick()) result = MVMM_LOCK_WAIT_KICKED;
  }
  if (result == MVMM_LOCK_WAIT_KICKED) ++stats_.lock_wakes_by_kick;
  p_.vcpu.Set(Reg::kRax, static_cast<uint64_t>(result));
  if (observed_) event_.result = result;
  return std::nullopt;
}

// Why nothing could wake the VM. With one vCPU: what that vCPU did.
std::string RunLoop::HaltedForeverDetail(bool from_hlt, bool halted, bool lock_wait) const {
  const char* what = lock_wait  ? "the guest waited in lock_wait with no kick or timer to come"
                     : halted   ? "the guest halted with interrupts disabled"
                     : from_hlt ? "the guest halted with no timer armed"
                                : "the guest blocked with no timer armed";
  if (cpus_->count() == 1) return what;
  return absl::StrFormat(
      "every vCPU is blocked or halted and nothing can wake any of them; vCPU %u last: %s",
      p_.vcpu_id, what);
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
