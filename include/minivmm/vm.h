// A minivmm virtual machine: one or more vCPUs (VmConfig::cpus) running a
// guest kernel on /dev/kvm, with exits counted per vCPU by reason, device,
// hypercall and cause. Part of the
// public API (docs/API.md).
//
// The library never exits the process, installs no signal handlers and
// prints nothing: console output goes to VmConfig::console.
#ifndef MINIVMM_VM_H_
#define MINIVMM_VM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "minivmm/exit_event.h"
#include "minivmm/hypercall_env.h"
#include "minivmm/io_device.h"
#include "minivmm/run_result.h"
#include "minivmm/vm_config.h"

namespace minivmm {

class Vm {
 public:
  using HypercallHandler =
      std::function<absl::StatusOr<uint64_t>(HypercallEnv&, const HypercallArgs&)>;
  using ExitObserver = minivmm::ExitObserver;

  // Opens /dev/kvm, creates the VM and its vCPU, maps RAM and the GDT page,
  // loads the kernel and writes the boot structures. Errors: NotFound /
  // PermissionDenied (device or kernel file), FailedPrecondition (a required
  // KVM capability is missing), InvalidArgument (bad config or ELF),
  // OutOfRange (an ELF segment outside RAM).
  static absl::StatusOr<std::unique_ptr<Vm>> Create(const VmConfig& config);
  ~Vm();

  // Extension points; call before Run().
  // A hypercall number in [MVMM_HC_USER_FIRST, MVMM_HC_USER_LAST].
  absl::Status RegisterHypercall(uint32_t nr, std::string name, HypercallHandler handler);
  // A device on [base, base + length) of the port space or the physical
  // address space (outside RAM and the GDT page). Not owned; must outlive the VM.
  absl::Status RegisterPioDevice(uint64_t base, uint64_t length, IoDevice* device);
  absl::Status RegisterMmioDevice(uint64_t base, uint64_t length, IoDevice* device);
  // Called after every exit when set; costs one branch when unset. With
  // several vCPUs it is called on each vCPU's thread (ExitEvent::vcpu), never
  // on two at once: exits are handled one at a time under the VM's lock, so
  // the observer must not wait for another vCPU's exit.
  void SetExitObserver(ExitObserver observer);

  // Runs the guest until it stops (see StopReason): vCPU 0 on the calling
  // thread, every other vCPU on a thread of its own that ends before Run()
  // returns. The first vCPU that stops by itself (guest shutdown, a fault,
  // halted forever, a VMM error) stops all the others, as do the timeout and
  // RequestStop(); RunResult::stopped_by_vcpu and vcpu_stops say which did
  // what. Returns an error only when the VMM itself fails before the guest
  // runs.
  absl::StatusOr<RunResult> Run();

  // Asks a running Run() to stop soon with kStopRequested. Any thread;
  // async-signal-safe.
  void RequestStop();

  struct State;

 private:
  explicit Vm(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace minivmm

#endif  // MINIVMM_VM_H_
