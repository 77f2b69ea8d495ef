// What Vm::Run() returns. Part of the public API (docs/API.md).
#ifndef MINIVMM_RUN_RESULT_H_
#define MINIVMM_RUN_RESULT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "minivmm/exit_stats.h"
#include "minivmm/hypercall_env.h"

namespace minivmm {

enum class StopReason {
  kGuestShutdown,     // sched_op(shutdown) or the debug-exit port; exit_code is the guest's
  kTripleFault,       // KVM_EXIT_SHUTDOWN
  kEmulationFailure,  // KVM_EXIT_INTERNAL_ERROR (e.g. an instruction the host cannot emulate)
  kHaltedForever,     // HLT or sched_op(block) with nothing that could ever wake the vCPU
  kTimeout,           // VmConfig::timeout elapsed
  kStopRequested,     // Vm::RequestStop() (the CLI calls it on SIGINT/SIGTERM)
  kVmmError,          // failed entry, an unknown exit, or an ioctl error
};
std::string_view StopReasonName(StopReason reason);

struct HostCounter {
  std::string name;
  uint64_t delta;  // over the run; host-dependent (docs/hosts.md)
};

struct RunResult {
  StopReason reason = StopReason::kVmmError;
  int exit_code = 0;   // the guest's code when reason == kGuestShutdown
  std::string detail;  // one line on why the run stopped
  absl::Duration elapsed;
  // The guest's TSC rate (KVM_GET_TSC_KHZ), to turn the guest's TSC
  // measurements into time; 0 when KVM does not say.
  uint64_t guest_tsc_khz = 0;

  ExitStats stats;                           // all vCPUs
  std::vector<ExitStats> per_vcpu;           // indexed by vCPU id (one vCPU today)
  std::vector<std::string> pio_devices;      // names, indexed like stats.pio_by_device
  std::vector<std::string> mmio_devices;     // names, indexed like stats.mmio_by_device
  std::vector<std::string> hypercall_names;  // indexed by number; "" = unregistered
  std::vector<HostCounter> host_counters;
  GuestReports reports;
  std::vector<std::string> console_tail;                    // the last console lines
  std::vector<std::pair<std::string, uint64_t>> registers;  // at the stop
  std::vector<std::string> notes;  // things logged once during the run (dropped GDT stores, ...)
};

}  // namespace minivmm

#endif  // MINIVMM_RUN_RESULT_H_
