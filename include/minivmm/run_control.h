// What a device or hypercall handler asks the run loop to do after the exit
// it is handling. Data (and a machine's resume path), one per vCPU, read by
// the run loop after every handled exit.
#ifndef MINIVMM_RUN_CONTROL_H_
#define MINIVMM_RUN_CONTROL_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>

#include "absl/status/status.h"

namespace minivmm {

enum class VcpuRequest : uint8_t {
  kNone,      // resume the guest
  kYield,     // sched_op(yield): give other vCPUs/threads a chance, then resume
  kBlock,     // sched_op(block) or HLT: sleep until an interrupt is pending
  kShutdown,  // the guest asked to stop; exit_code says with what
  kLockWait,  // lock_wait: sleep until kicked or an interrupt is pending
  kSuspend,   // ACPI S3: sleep until wake_at_ns, then `resume` (Suspend)
};

struct RunControl {
  VcpuRequest request = VcpuRequest::kNone;
  int exit_code = 0;
  // The guest-physical address of the vCPU's struct mvmm_vcpu_info once the
  // guest registered it (vcpu_op): from then on the run loop honours its
  // evtchn_upcall_mask and sets its evtchn_upcall_pending (minivmm_abi/boot.h).
  // Checked at registration: 64-byte aligned and inside guest RAM.
  std::optional<uint64_t> vcpu_info_gpa;
  // The guest-physical address of the vCPU's struct mvmm_vcpu_runstate once
  // the guest registered it (vcpu_op): the run loop writes the state into it
  // when the vCPU blocks and wakes. Checked at registration: 8-byte aligned
  // and inside guest RAM.
  std::optional<uint64_t> runstate_gpa;

  // With kSuspend: when the machine's wake event is due (steady_clock
  // nanoseconds; none: nothing will wake it) and what then brings the vCPU
  // back (the firmware's resume path; an error stops the run with its
  // message). The run loop takes both when it honours the request.
  std::optional<uint64_t> wake_at_ns;
  std::function<absl::Status()> resume;

  void Suspend(std::optional<uint64_t> wake_at, std::function<absl::Status()> resume_path) {
    request = VcpuRequest::kSuspend;
    wake_at_ns = wake_at;
    resume = std::move(resume_path);
  }
  void Shutdown(int code) {
    request = VcpuRequest::kShutdown;
    exit_code = code;
  }
};

}  // namespace minivmm

#endif  // MINIVMM_RUN_CONTROL_H_
