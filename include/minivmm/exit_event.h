// What an exit observer sees of each exit (Vm::SetExitObserver, --trace).
// Part of the public API (docs/API.md).
#ifndef MINIVMM_EXIT_EVENT_H_
#define MINIVMM_EXIT_EVENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "minivmm/exit_stats.h"
#include "minivmm/hypercall_env.h"

namespace minivmm {

struct ExitSite;  // minivmm/exit_sites.h

// One exit, as seen by an exit observer (and --trace).
struct ExitEvent {
  uint64_t sequence = 0;  // this vCPU's exits before this one (counted per vCPU)
  ExitReason reason = ExitReason::kIo;
  uint64_t address = 0;  // port or guest-physical address; 0 otherwise
  bool is_write = false;
  int64_t hypercall = -1;  // number, or -1 when the exit was not a hypercall
  HypercallArgs args{};
  int64_t result = 0;  // the hypercall's RAX result
  // Why a hypercall was refused (result < 0), e.g. "count above
  // MVMM_CONSOLEIO_MAX_BYTES"; empty otherwise. Static text.
  std::string_view refusal;
  uint32_t vcpu = 0;  // index of the vCPU that exited
  // Host monotonic time (ExitClockNs()): when KVM_RUN
  // returned with this exit, and when the VMM had handled it and was about to
  // re-enter the guest (the observer itself runs after that). Taken only when
  // an observer is set.
  int64_t exit_ns = 0;
  int64_t resume_ns = 0;
  // For a `report` hypercall: the key=value entries it added to
  // RunResult::reports. Valid only during the observer call.
  std::span<const std::pair<std::string, std::string>> reports;
  // With the wasted-exit analysis (VmConfig::analyse_waste): why this exit
  // was wasted ("same_value", "cancelled_pair", "all_entries_wasted"), empty
  // when it was not; and the earlier exit whose operation this one's undid
  // (both wasted as a pair), -1 when none.
  std::string_view wasted;
  int64_t cancels = -1;
  // With VmConfig::record_sites: the exit's site (its cause and guest
  // stack, as counted in RunResult::sites_per_vcpu); null without. Valid
  // only during the observer call.
  const ExitSite* site = nullptr;
};

// The clock of ExitEvent::exit_ns and resume_ns: std::chrono::steady_clock in
// nanoseconds.
inline int64_t ExitClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Called after every exit when set (Vm::SetExitObserver).
using ExitObserver = std::function<void(const ExitEvent&)>;

}  // namespace minivmm

#endif  // MINIVMM_EXIT_EVENT_H_
