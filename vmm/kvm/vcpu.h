// One KVM vCPU: its fd, its kvm_run mapping and its binary-stats fd.
//
// The run loop uses KVM_CAP_SYNC_REGS: after every KVM_RUN the guest's
// general registers and segment/control state are already in kvm_run, and
// changes are written back by marking them dirty, so handling a hypercall
// costs exactly one ioctl (the KVM_RUN) and no KVM_GET/SET_REGS.
//
// Thread-safety: all calls from the vCPU's own thread, except Kick(), which
// any thread may call.
#ifndef MINIVMM_VMM_KVM_VCPU_H_
#define MINIVMM_VMM_KVM_VCPU_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/core/vcpu.h"
#include "vmm/core/vcpu_exit.h"
#include "vmm/kvm/fd.h"

struct kvm_run;

namespace minivmm {

// The initial 64-bit state of the direct boot (docs/design.md "Boot").
struct LongModeBoot {
  uint64_t rip = 0;
  uint64_t rsp = 0;
  uint64_t rdi = 0;
  uint64_t cr3 = 0;
  uint64_t gdt_base = 0;
  uint16_t gdt_limit = 0;
  uint64_t tss_base = 0;
};

class KvmVcpu final : public Vcpu {
 public:
  // Takes ownership of the vCPU fd; maps kvm_run. Use KvmVm::CreateVcpu.
  static absl::StatusOr<std::unique_ptr<KvmVcpu>> Create(int kvm_fd, int vcpu_fd, int id);
  ~KvmVcpu() override;
  KvmVcpu(const KvmVcpu&) = delete;
  KvmVcpu& operator=(const KvmVcpu&) = delete;

  int id() const { return id_; }

  // Boot-time set-up (ioctls; not on the exit path).
  absl::Status SetSupportedCpuid(int kvm_fd);
  absl::Status SetLongModeBoot(const LongModeBoot& boot);

  // Makes the calling thread this vCPU's thread: Kick() signals it, and the
  // kick signal is blocked outside KVM_RUN (see kick.h). Call before Run().
  absl::Status BindToCurrentThread();
  // Stops kicking the thread and consumes a kick that is still pending, so
  // that no blocked kick signal outlives the run in the caller's thread.
  void UnbindFromThread();

  // Enters the guest once and decodes the exit; EINTR and EAGAIN (a kick)
  // decode as Interrupted, any other failure as RunFailed.
  VcpuExit Run() override;

  // Interrupt injection without an in-kernel irqchip.
  bool ReadyForInterrupt() const override;
  absl::Status InjectInterrupt(uint32_t vector) override;
  void RequestInterruptWindow(bool on) override;

  // Makes a KVM_RUN in progress (or the next one) return at once. Any thread.
  void Kick() override;
  void ClearKick() override;

  // VcpuState's registers are the synced block in kvm_run; CR0 and CR3 are
  // in the synced sregs, written back by marking them dirty.
  uint64_t Cr0() const override;
  void SetCr0(uint64_t value) override;
  uint64_t Cr3() const override;
  void SetCr3(uint64_t value) override;

  std::vector<std::pair<std::string, uint64_t>> DumpRegisters() const override;

  // KVM_GET_STATS_FD counters (name, value); empty when unsupported.
  absl::StatusOr<std::vector<std::pair<std::string, uint64_t>>> ReadStats() const;

 private:
  KvmVcpu(Fd fd, int id, kvm_run* run, size_t run_size);
  // Marks the synced sregs for write-back on the next KVM_RUN.
  void MarkSregsDirty();

  Fd fd_;
  Fd stats_fd_;
  int id_;
  kvm_run* run_;
  size_t run_size_;
  pthread_t thread_{};
  std::atomic<bool> thread_known_{false};
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_KVM_VCPU_H_
