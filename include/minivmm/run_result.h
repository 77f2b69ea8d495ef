// What Vm::Run() returns. Part of the public API (docs/API.md).
#ifndef MINIVMM_RUN_RESULT_H_
#define MINIVMM_RUN_RESULT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "minivmm/exit_sites.h"
#include "minivmm/exit_stats.h"
#include "minivmm/hypercall_env.h"
#include "minivmm/kernel_exits.h"

namespace minivmm {

enum class StopReason {
  kGuestShutdown,     // sched_op(shutdown) or the debug-exit port; exit_code is the guest's
  kTripleFault,       // KVM_EXIT_SHUTDOWN
  kEmulationFailure,  // KVM_EXIT_INTERNAL_ERROR (e.g. an instruction the host cannot emulate)
  kHaltedForever,     // every vCPU in HLT or sched_op(block), nothing could ever wake any
  kTimeout,           // VmConfig::timeout elapsed
  kStopRequested,     // Vm::RequestStop() (the CLI calls it on SIGINT/SIGTERM)
  kVmmError,          // failed entry, an unknown exit, or an ioctl error
};
std::string_view StopReasonName(StopReason reason);

struct HostCounter {
  std::string name;
  uint64_t delta;  // over the run; host-dependent (docs/hosts.md)
};

// One of a vCPU's last exits (VmConfig::recent_exits): what KVM_RUN
// returned and the guest registers it left, noted before the exit is
// handled. docs/design.md "Recent exits".
struct RecentExit {
  // The vCPU's KVM_RUN returns before this one: every exit counts, and so
  // does a KVM_RUN that failed.
  uint64_t sequence = 0;
  // ExitReason::kCount: KVM_RUN itself failed (`detail` is the errno).
  ExitReason reason = ExitReason::kCount;
  bool hypercall = false;  // an `out` the run loop dispatched as a hypercall
  bool write = false;      // an `out` or an MMIO write
  uint8_t size = 0;        // an access's bytes (a port or MMIO exit)
  // The vector the VMM injected just before the entry that this exit ended;
  // 0: none.
  uint8_t injected_vector = 0;
  uint8_t cpl = 0;
  uint64_t address = 0;  // the port or the guest-physical MMIO address
  // A write's first (up to 8) bytes, little-endian; for the other reasons
  // KVM's detail: fail_entry's hardware reason, internal_error's suberror,
  // system_event's type, an unknown exit's number, a failed KVM_RUN's errno.
  uint64_t detail = 0;
  uint64_t rip = 0;
  uint64_t rflags = 0;
  uint64_t rax = 0;  // a hypercall's number
  uint64_t rdi = 0;  // a hypercall's first argument
  uint64_t rsi = 0;  // its second
};

// How one vCPU's part of the run ended.
struct VcpuStop {
  // Its own stop (a guest shutdown, a fault, halted forever, a VMM error), or
  // the timeout or stop request it saw; when `with_vm`, the stop another vCPU
  // made (then this is RunResult::reason).
  StopReason reason = StopReason::kVmmError;
  std::string detail;
  // It left the guest because another vCPU (RunResult::stopped_by_vcpu)
  // stopped the VM.
  bool with_vm = false;
  // It was asleep in a block or HLT (idle) when the run stopped.
  bool idle = false;
};

struct RunResult {
  StopReason reason = StopReason::kVmmError;
  int exit_code = 0;   // the guest's code when reason == kGuestShutdown
  std::string detail;  // one line on why the run stopped
  absl::Duration elapsed;
  // The guest's TSC rate (KVM_GET_TSC_KHZ), to turn the guest's TSC
  // measurements into time; 0 when KVM does not say.
  uint64_t guest_tsc_khz = 0;
  // The vCPU whose own exit stopped the run (guest shutdown, fault, halted
  // forever, VMM error): the first one, when several did at once. -1 when the
  // host stopped it (kTimeout, kStopRequested), which reaches every vCPU.
  int stopped_by_vcpu = -1;
  std::vector<VcpuStop> vcpu_stops;  // indexed by vCPU id

  // The run's counts summed over its vCPUs: stats.X is the sum of
  // per_vcpu[v].X for every counter X (ExitStats::Add).
  ExitStats stats;
  // Each vCPU's own counts, indexed by vCPU id (0 = the boot CPU); one entry
  // per vCPU of VmConfig::cpus, so per_vcpu.size() == vcpu_count(). Every
  // exit is counted on the vCPU that took it; a vCPU that never entered the
  // guest has all zeros.
  std::vector<ExitStats> per_vcpu;
  // Each vCPU's exit sites, indexed like per_vcpu; empty unless
  // VmConfig::record_sites (docs/sites.md).
  std::vector<ExitSites> sites_per_vcpu;
  std::vector<std::string> pio_devices;      // names, indexed like stats.pio_by_device
  std::vector<std::string> mmio_devices;     // names, indexed like stats.mmio_by_device
  std::vector<std::string> hypercall_names;  // indexed by number; "" = unregistered
  std::vector<HostCounter> host_counters;
  // With VmConfig::kernel_exits, each vCPU's exits as KVM's kvm:kvm_exit
  // tracepoint reported them; empty without.
  std::vector<KernelExitCounts> kernel_exits;
  // With VmConfig::kernel_exits, the run's phases (kernel_exits.h).
  std::vector<KernelExitPhase> kernel_exit_phases;
  // With VmConfig::kernel_exit_events, every vCPU's exits one by one, in
  // time order, and the names their `reason` indexes.
  std::vector<KernelExitEvent> kernel_exit_events;
  std::vector<std::string> kernel_exit_reasons;
  // With kernel_exits and record_sites: whether each in-kernel exit's site
  // is its frame-pointer stack (KernelExitCounts::by_reason_stack), taken
  // by a BPF program on kvm_exit; where the host does not allow it, false,
  // and `notes` says why (the sites are then each exit's RIP alone).
  bool kernel_exit_stacks = false;
  // The stacks kernel_exit_events' `stack` indexes (each once).
  std::vector<std::vector<uint64_t>> kernel_exit_stack_list;
  GuestReports reports;
  std::vector<std::string> console_tail;  // the last console lines
  // At the stop, of vCPU stopped_by_vcpu (vCPU 0 when the host stopped the run).
  std::vector<std::pair<std::string, uint64_t>> registers;
  std::vector<std::string> notes;  // things logged once during the run (dropped GDT stores, ...)
  // Each vCPU's last exits, oldest first, indexed like per_vcpu: at most
  // VmConfig::recent_exits each; empty when that is 0.
  std::vector<std::vector<RecentExit>> recent_exits;

  // The VM's vCPUs (VmConfig::cpus): the size of per_vcpu and vcpu_stops.
  uint32_t vcpu_count() const { return static_cast<uint32_t>(per_vcpu.size()); }
};

// One line for `exit`, e.g. "#41 hypercall sched_op rdi=0x2 rsi=0x4 rip=0x...
// rflags=0x2 cpl=0" or "#7 io in port 0x3f8 size 1 rip=...", naming a
// hypercall from `hypercall_names` (RunResult::hypercall_names).
std::string DescribeRecentExit(const RecentExit& exit,
                               const std::vector<std::string>& hypercall_names);

// Whether the run stopped on a failure: not by the guest's own shutdown, or,
// for the built-in guest (`builtin_guest`), by its shutdown after a failed
// self-check, an unhandled exception, an assertion or a panic
// (MVMM_SHUTDOWN_*, guest/README.md "Shutdown codes").
bool StoppedOnAFailure(const RunResult& result, bool builtin_guest);

// What tells a host fault from a guest bug when a run stops on a failure:
// the stopping vCPU's registers (RunResult::registers) and each vCPU's
// recent exits, oldest first, as lines without a trailing newline.
std::vector<std::string> StopDiagnosis(const RunResult& result);

}  // namespace minivmm

#endif  // MINIVMM_RUN_RESULT_H_
