// The vCPU run loop. Each exit is decoded once (Vcpu::Run); a hypercall (a
// 4-byte `out` to MVMM_HYPERCALL_PORT) goes straight to the dispatcher, any
// other exit to one device or its own case; each is counted with plain
// increments and turned into "resume" or "stop". Independent of KVM: tests
// drive it with a scripted Vcpu.
//
// One RunLoop per vCPU, each on its own thread. With several vCPUs the
// buses, the dispatcher's environment (console, reports, GDT page, timer)
// and the exit observer are shared: each exit is then handled under the
// VM's big lock (RunLoopParts::big_lock), released while the vCPU is in the
// guest or asleep in Block(), so devices, handlers and the observer never
// run on two vCPU threads at once. A single vCPU takes no lock.
#ifndef MINIVMM_VMM_RUN_RUN_LOOP_H_
#define MINIVMM_VMM_RUN_RUN_LOOP_H_

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hypercalls/dispatcher.h"
#include "hypercalls/hypercall_port.h"
#include "minivmm/exit_event.h"
#include "minivmm/hypercall_env.h"
#include "minivmm/run_result.h"
#include "vmm/bus/bus.h"
#include "vmm/core/ioapic_eoi.h"
#include "vmm/core/vcpu.h"
#include "vmm/core/vcpu_identity.h"
#include "vmm/core/waste.h"
#include "vmm/run/recent_exits.h"
#include "vmm/run/site_recorder.h"
#include "vmm/run/vm_cpus.h"
#include "vmm/run/vm_signals.h"

namespace minivmm {

struct RunStop {
  StopReason reason;
  std::string detail;
  int exit_code = 0;
  // The loop left because another vCPU stopped the VM (VmSignals::kVmStopped);
  // `reason` is then kStopRequested and means nothing by itself.
  bool vm_stopped = false;
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
  // True while one of vCPU `cpu`'s timers could still raise an interrupt on
  // it (periodic or armed); empty: no timer.
  std::function<bool(uint32_t cpu)> timer_can_fire;
  HypercallParts hypercalls;
  const ExitObserver* observer = nullptr;  // null or empty: none
  // The wasted-exit analysis (vmm/core/waste.h): ExitStats::wasted_* and
  // ExitEvent::wasted.
  bool analyse_waste = false;
  // The vCPU's number. Number 0 is the boot CPU, whose periodic timer
  // --timer-hz starts.
  uint32_t vcpu_id = 0;
  // Non-null when other vCPUs share the VM: every exit is handled holding it.
  std::mutex* big_lock = nullptr;
  // Every vCPU of the VM (vCPU `vcpu_id`'s own signals among them): the IPI
  // hypercalls' directory and the VM-wide halting rule. Null: a loop tested
  // on its own, as the only vCPU that can sleep among `vcpu_id + 1`, the
  // others always awake and out of reach.
  VmCpus* cpus = nullptr;
  // Record each exit's site (minivmm/exit_sites.h, docs/sites.md).
  bool record_sites = false;
  // The GDT base and TR the VMM gave this vCPU (BootIdentity), checked at
  // every hypercall exit in a build without NDEBUG (identity_mismatches);
  // empty: not checked.
  std::optional<VcpuIdentity> identity = std::nullopt;
  // Keep the vCPU's last this many exits (RecentExitRing); 0: none.
  uint32_t recent_exits = 0;
  // The machine's interrupt model (vmm/machine/machine.h): true, the VMM's
  // own (its timer and IPIs injected with KVM_INTERRUPT, HLT and interrupt
  // windows handled here); false, KVM's in-kernel controllers, which handle
  // both in the kernel, so such an exit reaching the loop stops the run with
  // a VMM error instead of being served by the wrong model.
  bool own_interrupts = true;
  // The machine's side of Hyper-V's SynIC (vmm/core/hyperv_host.h); null:
  // none, and a hypercall KVM leaves to the VMM gets
  // HV_STATUS_INVALID_HYPERCALL_CODE.
  HypervHost* hyperv = nullptr;
  // The machine's own IOAPIC (vmm/core/ioapic_eoi.h); null: none, and an
  // IOAPIC EOI exit stops the run with a VMM error.
  IoapicEoiSink* ioapic_eoi = nullptr;
};

class RunLoop {
 public:
  explicit RunLoop(RunLoopParts parts);

  // Runs until the guest stops; see StopReason.
  RunStop Loop() { return LoopOn(p_.vcpu); }
  // The same loop with `vcpu`'s own Run(): for a final vCPU type whose Run()
  // is visible (KvmVcpu), the call and the decoded exit disappear into the
  // loop. `vcpu` must be the parts' vCPU.
  template <typename V>
  RunStop LoopOn(V& vcpu);

  const ExitStats& stats() const { return stats_; }
  // The exits' sites; empty unless RunLoopParts::record_sites.
  ExitSites sites() const { return sites_ ? sites_->sites() : ExitSites{}; }
  // Whether the vCPU was asleep in a block or HLT when the run stopped.
  bool idle_at_stop() const { return idle_at_stop_; }
  // The first refusal of each kind of hypercall, one line each.
  const std::vector<std::string>& notes() const { return refusals_.lines(); }
  // The last RunLoopParts::recent_exits exits, oldest first.
  std::vector<RecentExit> recent_exits() const {
    return recent_ ? recent_->InOrder() : std::vector<RecentExit>{};
  }

 private:
  template <typename V, bool kAnalysed, bool kShared, bool kSites, bool kRecent>
  RunStop LoopWith(V& vcpu);
  template <typename V, bool kSites, bool kRecent>
  RunStop LoopChoosing(V& vcpu);
  std::optional<RunStop> HonourSignals(uint32_t raised);
  [[gnu::cold]] void IdentityMismatch(const VcpuIdentity& found);
  bool IsHypercall(const VcpuExit& exit) const;
  // Handle: an exit, hypercalls first. HandleHypercall, HandleNotHypercall:
  // its two halves, for a loop that has tested IsHypercall already. Always
  // inlined: on its own GCC keeps them out of line in the loop without the
  // analysis, which costs every exit a call (bench/instructions_per_exit.sh).
  [[gnu::always_inline]] std::optional<RunStop> Handle(const VcpuExit& exit, ExitEvent* event);
  [[gnu::always_inline]] std::optional<RunStop> HandleHypercall(ExitEvent* event);
  [[gnu::always_inline]] std::optional<RunStop> HandleNotHypercall(const VcpuExit& exit);
  std::optional<RunStop> HandleObserved(const VcpuExit& exit);
  std::optional<RunStop> HandleOther(const VcpuExit& exit);
  [[gnu::cold]] std::optional<RunStop> ForeignInterruptExit(std::string_view what);
  template <typename Span>
  void Access(const Bus& bus, uint64_t address, uint8_t size, Span data, bool pio);
  std::optional<RunStop> HonourRequest();
  std::optional<RunStop> Block(bool from_hlt, bool lock_wait = false);
  std::optional<RunStop> LockWait();
  std::optional<RunStop> Suspend();
  void SleepWithoutBigLock(
      const std::function<bool()>& woken,
      std::chrono::steady_clock::time_point until = std::chrono::steady_clock::time_point::max());
  std::string HaltedForeverDetail(bool from_hlt, bool halted, bool lock_wait) const;
  static void Describe(const VcpuExit& exit, ExitEvent& event);

  RunLoopParts p_;
  std::optional<VmCpus> own_cpus_;  // when p_.cpus is null
  VmCpus* cpus_;
  ExitStats stats_;
  RunControl control_;
  ExitContext ctx_;
  HypercallEnv env_;
  RefusalNotes refusals_;
  std::optional<WasteLog> waste_;
  // Heap-held: its history is large, and the loop without sites keeps its
  // members where they were.
  std::unique_ptr<SiteRecorder> sites_;
  std::unique_ptr<RecentExitRing> recent_;  // likewise
  ExitEvent event_;  // the exit being observed, when an observer is set
  // The port bus's index of the hypercall port, for pio_by_device; -1 when
  // no device claims it: then an `out` to the port is not a hypercall at
  // all (not dispatched, not counted as one) but an ordinary port write to
  // nobody (Handle).
  int hypercall_device_ = -1;
  uint64_t sequence_ = 0;
  bool observed_ = false;
  bool idle_at_stop_ = false;
  bool identity_reported_ = false;
};

template <typename V>
RunStop RunLoop::LoopOn(V& vcpu) {
  if (recent_) [[unlikely]]
    return sites_ ? LoopChoosing<V, true, true>(vcpu) : LoopChoosing<V, false, true>(vcpu);
  if (sites_) [[unlikely]]
    return LoopChoosing<V, true, false>(vcpu);
  return LoopChoosing<V, false, false>(vcpu);
}

// LoopOn's loops with each exit's site recorded (kSites) or not, and the
// recent exits kept (kRecent) or not.
template <typename V, bool kSites, bool kRecent>
RunStop RunLoop::LoopChoosing(V& vcpu) {
  const bool analysed = waste_ && !observed_;
  if (p_.big_lock != nullptr) {
    return analysed ? LoopWith<V, true, true, kSites, kRecent>(vcpu)
                    : LoopWith<V, false, true, kSites, kRecent>(vcpu);
  }
  return analysed ? LoopWith<V, true, false, kSites, kRecent>(vcpu)
                  : LoopWith<V, false, false, kSites, kRecent>(vcpu);
}

// The loop itself, compiled for each combination of: the wasted-exit
// analysis around each exit (kAnalysed, no observer) or not, where an
// observer (who also gets the analysis, when it is on) costs the common path
// one test; and the big lock around each exit's handling (kShared: other
// vCPUs share the VM) or not; and each exit's site recorded around it
// (kSites) or not; and each exit noted in the ring of recent exits
// (kRecent) or not.
template <typename V, bool kAnalysed, bool kShared, bool kSites, bool kRecent>
RunStop RunLoop::LoopWith(V& vcpu) {
  const bool observed = observed_;
  SiteRecorder* const sites = sites_.get();
  RecentExitRing* const recent = recent_.get();
  // Only the recorder reads a site: the exits may be repeats.
  if constexpr (kSites) sites->AllowRepeats(!observed && !waste_);
  for (;;) {
    bool interrupt_pending = false;
    if (const uint32_t raised = p_.signals.Raised(); raised != 0) [[unlikely]] {
      if (std::optional<RunStop> stop = HonourSignals(raised)) return *stop;
      if constexpr (kAnalysed)
        interrupt_pending = (p_.signals.Raised() & VmSignals::kAnyInterrupt) != 0;
    }
    const VcpuExit exit = vcpu.Run();
    std::optional<std::lock_guard<std::mutex>> lock;
    if constexpr (kShared) lock.emplace(*p_.big_lock);
    if constexpr (kAnalysed) waste_->BeginExit(sequence_++, interrupt_pending);
    const bool hypercall = IsHypercall(exit);
    if constexpr (kRecent) recent->Note(exit, p_.vcpu, hypercall);
    [[maybe_unused]] SiteRecorder::RepeatKey key;
    if constexpr (kSites) {
      if (hypercall) [[likely]] {
        key = sites->Key();
        // A repeat of the last site that needs nothing after the exit:
        // counted and handled, and the next exit (never with an observer or
        // the analysis: AllowRepeats; a loop with the analysis has none).
        if constexpr (!kAnalysed) {
          if (sites->CountRepeat(key)) [[likely]] {
            if (std::optional<RunStop> stop = HandleHypercall(nullptr)) [[unlikely]]
              return *stop;
            continue;
          }
        }
      }
    }
    // Hypercalls first; the site (kSites) begins on each path with what it
    // has tested. The result is made in place (no assignment of a stop).
    std::optional<RunStop> stop = [&]() __attribute__((always_inline))->std::optional<RunStop> {
      if (hypercall) [[likely]] {
        if constexpr (kSites) sites->BeginHypercall(exit, key);
        return !kAnalysed && observed ? HandleObserved(exit) : HandleHypercall(nullptr);
      }
      if constexpr (kSites) sites->Begin(exit, false);
      return !kAnalysed && observed ? HandleObserved(exit) : HandleNotHypercall(exit);
    }
    ();
    // After the exit, whether it stops the run or not (each branch its own
    // copy, so that the common one needs no stop kept across it).
    const auto end_exit = [&] {
      if constexpr (kAnalysed) waste_->EndExit();
      if constexpr (kSites) {
        if (sites->EndPending()) sites->End(waste_ ? &*waste_ : nullptr, sequence_ - 1);
      }
    };
    if (!stop) [[likely]] {
      end_exit();
      continue;
    }
    end_exit();
    return *stop;
  }
}

// Whether Handle dispatches `exit` as a hypercall.
inline bool RunLoop::IsHypercall(const VcpuExit& exit) const {
  const IoOut* io = std::get_if<IoOut>(&exit);
  return io != nullptr && hypercall_device_ >= 0 && HypercallPort::IsHypercall(*io);
}

// Every exit goes through here, hypercalls first: a hypercall costs two
// increments and the dispatcher, then one test of the run control.
inline std::optional<RunStop> RunLoop::Handle(const VcpuExit& exit, ExitEvent* event) {
  if (IsHypercall(exit)) [[likely]]
    return HandleHypercall(event);
  return HandleNotHypercall(exit);
}

inline std::optional<RunStop> RunLoop::HandleHypercall(ExitEvent* event) {
#ifndef NDEBUG
  // The vCPU still runs on its own GDT and TSS (vmm/core/vcpu_identity.h).
  // A hypercall at CPL != 0 is the guest's doing, refused and counted as
  // refused_cpl3 by the dispatcher. Not in a release build: its exit path
  // stays as it is.
  if (p_.identity) {
    if (const VcpuIdentity found = p_.vcpu.Identity(); found != *p_.identity) [[unlikely]]
      IdentityMismatch(found);
  }
#endif
  ++stats_.by_reason[static_cast<int>(ExitReason::kIo)];
  ++stats_.pio_by_device[hypercall_device_];
  p_.hypercalls.dispatcher.HandleExit(env_, event, &refusals_);
  if (control_.request == VcpuRequest::kNone) [[likely]]
    return std::nullopt;
  return HonourRequest();
}

inline std::optional<RunStop> RunLoop::HandleNotHypercall(const VcpuExit& exit) {
  std::optional<RunStop> stop = HandleOther(exit);
  if (!stop && control_.request != VcpuRequest::kNone) stop = HonourRequest();
  return stop;
}

}  // namespace minivmm

#endif  // MINIVMM_VMM_RUN_RUN_LOOP_H_
