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

#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/core/vcpu.h"
#include "vmm/core/vcpu_exit.h"
#include "vmm/kvm/cpuid.h"
#include "vmm/kvm/fd.h"
#include "vmm/kvm/kick.h"

namespace minivmm {

// The initial 64-bit state of the direct boot (docs/design.md "Boot").
struct LongModeBoot {
  uint64_t rip = 0;
  uint64_t rsp = 0;
  uint64_t rdi = 0;
  uint64_t rsi = 0;
  uint64_t cr3 = 0;
  uint64_t gdt_base = 0;
  uint16_t gdt_limit = 0;
  uint64_t tss_base = 0;
  uint16_t tr_selector = 0;
};

// The initial state of a Multiboot-1 entry (Multiboot Specification 0.6.96,
// 3.2 "Machine state"): 32-bit protected mode, paging off, flat 4 GiB
// segments, EFLAGS.IF and VM clear, EAX the boot magic, EBX the information
// structure. The GDTR and IDTR are the guest's to set.
struct ProtectedModeBoot {
  uint32_t eip = 0;
  uint32_t eax = 0;
  uint32_t ebx = 0;
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
  // KVM_GET_SUPPORTED_CPUID, made this vCPU's (AdjustCpuid), set with
  // KVM_SET_CPUID2.
  // `not_given`: where a "+name" the user asked for was left clear
  // (ApplyCpuChoices).
  absl::Status SetCpuid(int kvm_fd, const CpuidMachine& machine,
                        std::vector<std::string>* not_given = nullptr);
  absl::Status SetLongModeBoot(const LongModeBoot& boot);
  absl::Status SetProtectedModeBoot(const ProtectedModeBoot& boot);
  // Real mode at segment:offset, as a BIOS's resume path jumps to the
  // FACS's waking vector: CR0.PE and paging off, CR4 and EFER 0, every data
  // segment 0, the IDT the vector table at 0, the general registers 0 and
  // RFLAGS 0x2. The exit under way is completed first (KVM finishes an OUT
  // on the next KVM_RUN, moving RIP past it: a KVM_RUN with immediate_exit
  // does that and nothing else), so that nothing moves what is set here.
  // On the vCPU's own thread, between exits.
  absl::Status EnterRealMode(uint16_t segment, uint16_t offset);

  // Makes the calling thread this vCPU's thread: Kick() signals it, and the
  // kick signal is blocked outside KVM_RUN (see kick.h). Call before Run().
  absl::Status BindToCurrentThread();
  // Stops kicking the thread and consumes a kick that is still pending, so
  // that no blocked kick signal outlives the run in the caller's thread. A
  // Kick() under way on another thread finishes first: once this returns, no
  // kick signal is sent to the thread, which may then exit.
  void UnbindFromThread();

  // Enters the guest once and decodes the exit; EINTR and EAGAIN (a kick)
  // decode as Interrupted, any other failure as RunFailed. Defined below,
  // in the header: RunLoop::LoopOn<KvmVcpu> inlines it into the loop.
  VcpuExit Run() override;

  // Interrupt injection without an in-kernel irqchip.
  VcpuInterruptState InterruptState() const override;
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
  uint64_t FsBase() const override;
  void SetFsBase(uint64_t value) override;
  // KVM_GET_FPU, hashed: one ioctl, for the wasted-exit analysis only;
  // nullopt when the ioctl fails.
  std::optional<uint64_t> FpuFingerprint() const override;

  std::vector<std::pair<std::string, uint64_t>> DumpRegisters() const override;
  // From the synced sregs: no ioctl.
  VcpuIdentity Identity() const override;
  bool Code32() const override;

  // The guest TSC rate in kHz (KVM_GET_TSC_KHZ), 0 when KVM does not say.
  uint64_t TscKhz() const;

  // KVM_GET_STATS_FD counters (name, value); empty when unsupported.
  absl::StatusOr<std::vector<std::pair<std::string, uint64_t>>> ReadStats() const;

 private:
  KvmVcpu(Fd fd, int id, kvm_run* run, size_t run_size);
  // Marks the synced sregs for write-back on the next KVM_RUN.
  void MarkSregsDirty();
  // KVM_SET_SREGS and KVM_SET_REGS of a boot protocol's entry state.
  absl::Status SetPowerOnState(const kvm_sregs& sregs, const kvm_regs& regs);

  Fd fd_;
  Fd stats_fd_;
  int id_;
  kvm_run* run_;
  size_t run_size_;
  pthread_t thread_{};
  std::atomic<bool> thread_known_{false};
  std::atomic<int> kicks_in_flight_{0};  // Kick() calls between the check and the signal
  static_assert(std::atomic<int>::is_always_lock_free);
};

namespace kvm_detail {

// KVM_RUN as a bare system call: glibc's ioctl() is variadic and
// stack-protected, 21 host instructions around the one that matters, on
// every exit. Returns 0 or -errno, like the kernel.
inline long KvmRunSyscall(int vcpu_fd) {
#if defined(__x86_64__)
  long ret;
  asm volatile("syscall"
               : "=a"(ret)
               : "0"(static_cast<long>(SYS_ioctl)), "D"(vcpu_fd), "S"(KVM_RUN), "d"(0)
               : "rcx", "r11", "memory");
  return ret;
#else
  return ioctl(vcpu_fd, KVM_RUN, 0) < 0 ? -errno : 0;
#endif
}

}  // namespace kvm_detail

// Always inline into the run loops (RunLoop::LoopWith, each specialised for
// KvmVcpu): bench/instructions_per_exit.sh counts its cost there, and GCC's
// own choice moved with whatever else the loop's file inlines.
[[gnu::always_inline]] inline VcpuExit KvmVcpu::Run() {
  const long rc = kvm_detail::KvmRunSyscall(fd_.get());
  run_->kvm_dirty_regs = 0;
  if (rc < 0) [[unlikely]] {
    if (rc == -EINTR || rc == -EAGAIN) {
      DrainKickSignal();
      return Interrupted{};
    }
    return RunFailed{static_cast<int>(-rc)};
  }
  kvm_run* r = run_;
  if (r->exit_reason == KVM_EXIT_IO) [[likely]] {
    // Safety: KVM guarantees data_offset + size * count lies in the kvm_run
    // mapping, which stays mapped while this vCPU exists.
    auto* data = reinterpret_cast<uint8_t*>(r) + r->io.data_offset;
    size_t len = static_cast<size_t>(r->io.size) * r->io.count;
    if (r->io.direction == KVM_EXIT_IO_OUT) return IoOut{r->io.port, r->io.size, {data, len}};
    return IoIn{r->io.port, r->io.size, {data, len}};
  }
  switch (r->exit_reason) {
    case KVM_EXIT_MMIO: {
      size_t len = r->mmio.len <= 8 ? r->mmio.len : 8;
      if (r->mmio.is_write) return MmioWrite{r->mmio.phys_addr, {r->mmio.data, len}};
      return MmioRead{r->mmio.phys_addr, {r->mmio.data, len}};
    }
    case KVM_EXIT_HLT:
      return Hlt{};
    case KVM_EXIT_IRQ_WINDOW_OPEN:
      return IrqWindowOpen{};
    case KVM_EXIT_INTR:
      return Interrupted{};
    case KVM_EXIT_SHUTDOWN:
      return Shutdown{};
    case KVM_EXIT_FAIL_ENTRY:
      return FailEntry{r->fail_entry.hardware_entry_failure_reason};
    case KVM_EXIT_INTERNAL_ERROR:
      return InternalError{r->internal.suberror};
    case KVM_EXIT_SYSTEM_EVENT:
      return SystemEvent{r->system_event.type};
    case KVM_EXIT_HYPERV:
      // SynicControl and HypervHypercall are laid out as KVM's structs.
      static_assert(sizeof(SynicControl) == sizeof(r->hyperv.u.synic) &&
                    offsetof(SynicControl, control) == 8 && offsetof(SynicControl, msg_page) == 24);
      static_assert(sizeof(HypervHypercall) == sizeof(r->hyperv.u.hcall) &&
                    offsetof(HypervHypercall, result) == 8 &&
                    offsetof(HypervHypercall, params) == 16);
      if (r->hyperv.type == KVM_EXIT_HYPERV_HCALL)
        return HypervExit{.type = r->hyperv.type,
                          .hcall = reinterpret_cast<HypervHypercall*>(&r->hyperv.u.hcall)};
      if (r->hyperv.type == KVM_EXIT_HYPERV_SYNIC)
        return HypervExit{.type = r->hyperv.type,
                          .synic = reinterpret_cast<const SynicControl*>(&r->hyperv.u.synic)};
      return HypervExit{.type = r->hyperv.type};
    case KVM_EXIT_IOAPIC_EOI:
      return IoapicEoi{r->eoi.vector};
    default:
      return UnknownExit{r->exit_reason};
  }
}

}  // namespace minivmm

#endif  // MINIVMM_VMM_KVM_VCPU_H_
