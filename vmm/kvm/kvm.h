// The one boundary to KVM: RAII owners of the /dev/kvm system fd, a VM fd and
// vCPU fds. Only files in vmm/kvm/ include <linux/kvm.h> or call ioctl().
// Every failure is an absl::Status naming the ioctl and errno.
#ifndef MINIVMM_VMM_KVM_KVM_H_
#define MINIVMM_VMM_KVM_KVM_H_

#include <linux/kvm.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/kvm/fd.h"
#include "vmm/kvm/vcpu.h"

namespace minivmm {

// What a PIC's initialisation words leave it as (KvmVm::ProgramPics): the
// vector of its IRQ 0 (ICW2) and its mask (OCW1); cascaded on IRQ 2, 8086
// mode, edge-triggered, normal EOI.
struct KvmPicProgram {
  uint8_t vector_base = 0;
  uint8_t mask = 0xFF;
};

struct KvmCapability {
  std::string name;  // e.g. "KVM_CAP_SYNC_REGS"
  int value;         // KVM_CHECK_EXTENSION result; 0 = absent
  bool required;     // minivmm refuses to run without it
};

class KvmSystem {
 public:
  // Opens `path` (normally /dev/kvm). Errors: NotFound (no such device),
  // PermissionDenied, FailedPrecondition (API version is not 12).
  static absl::StatusOr<KvmSystem> Open(const std::string& path = "/dev/kvm");

  int api_version() const { return api_version_; }
  int fd() const { return fd_.get(); }

  // The capabilities minivmm uses, each with KVM_CHECK_EXTENSION's answer.
  std::vector<KvmCapability> Capabilities() const;
  // OK where this KVM offers what VmConfig::hyperv needs (its Hyper-V leaves
  // from the system fd, KVM_CAP_SYS_HYPERV_CPUID, and SynIC,
  // KVM_CAP_HYPERV_SYNIC2); otherwise FailedPrecondition naming the first
  // one missing.
  absl::Status NeedHyperv() const;
  // FailedPrecondition naming the first missing required capability.
  absl::Status CheckRequiredCapabilities() const;

 private:
  KvmSystem(Fd fd, int api_version) : fd_(std::move(fd)), api_version_(api_version) {}
  Fd fd_;
  int api_version_ = 0;
};

class KvmVm {
 public:
  static absl::StatusOr<KvmVm> Create(const KvmSystem& kvm);

  // Maps `size` bytes of host memory at `host` to guest-physical `gpa` in
  // memslot `slot`. The host memory must outlive the VM.
  absl::Status SetMemoryRegion(uint32_t slot, uint64_t gpa, uint64_t size, void* host,
                               bool read_only);

  absl::StatusOr<std::unique_ptr<KvmVcpu>> CreateVcpu(const KvmSystem& kvm, int id);

  // The PC machine's in-kernel interrupt controllers (before any vCPU):
  // KVM_CREATE_IRQCHIP (a local APIC per vCPU, the IOAPIC, two PICs).
  // FailedPrecondition when this KVM has no KVM_CAP_IRQCHIP.
  absl::Status CreateIrqchip();
  // The q35 machine's split irqchip (before any vCPU): KVM_ENABLE_CAP
  // (KVM_CAP_SPLIT_IRQCHIP) with `ioapic_pins` GSIs reserved for the VMM's
  // IOAPIC: local APICs in the kernel, no IOAPIC, PIC or PIT there.
  // FailedPrecondition when this KVM has no KVM_CAP_SPLIT_IRQCHIP or
  // KVM_CAP_SIGNAL_MSI (the IOAPIC's and the devices' interrupts are MSIs).
  absl::Status CreateSplitIrqchip(uint32_t ioapic_pins);
  // KVM_SIGNAL_MSI: `data` written at `address` (an interrupt-range address)
  // delivered to the in-kernel local APICs. True: delivered; false: KVM
  // found no destination, or the guest's APIC blocked it (KVM returns 0).
  absl::StatusOr<bool> SignalMsi(uint64_t address, uint32_t data);
  // KVM_SET_GSI_ROUTING with one MSI route per entry: GSI `gsi` to `data`
  // at `address`. With the split irqchip, KVM reads the routes of the GSIs
  // reserved for the IOAPIC to know which vectors a level-triggered entry
  // sends, and exits with KVM_EXIT_IOAPIC_EOI at their EOI.
  struct MsiRoute {
    uint32_t gsi;
    uint64_t address;
    uint32_t data;
    bool operator==(const MsiRoute&) const = default;
  };
  absl::Status SetMsiRoutes(std::span<const MsiRoute> routes);
  // KVM_SET_GSI_ROUTING as QEMU's PC machine sets it (after CreateIrqchip):
  // GSI n to PIC input n (n < 16, but 2, the cascade) and IOAPIC pin n
  // (n < 24), except GSI 0 to IOAPIC pin 2, where the MADT's interrupt
  // source override says ISA IRQ 0 is, and GSI 2 to nothing.
  absl::Status RouteIsaIrqsAsPc();
  // The routes RouteIsaIrqsAsPc sets, for a caller that adds its own.
  static std::vector<kvm_irq_routing_entry> PcIsaRoutes();
  // KVM_SET_GSI_ROUTING: `routes` replace the whole table.
  absl::Status SetGsiRouting(std::span<const kvm_irq_routing_entry> routes);
  // KVM_IRQFD with KVM_IRQFD_FLAG_RESAMPLE: KVM raises GSI `gsi` when `fd`
  // (an eventfd) is written and writes `resample_fd` (an eventfd) whenever
  // the guest acknowledges the interrupt (for a Hyper-V SINT route: an EOI
  // of its vector or a write of the EOM MSR). Needs the full in-kernel
  // irqchip (CreateIrqchip).
  absl::Status AssignResampleIrqfd(uint32_t gsi, int fd, int resample_fd);
  // Whether KVM serves HvSignalEvent itself for a connection given an
  // eventfd (KVM_CAP_HYPERV_EVENTFD).
  bool HasHypervEventfd() const;
  // KVM_HYPERV_EVENTFD: KVM writes `fd` (an eventfd) at each HvSignalEvent
  // for connection `conn_id` (24 bits), instead of leaving the hypercall to
  // the VMM; fd -1 deassigns it.
  absl::Status SetHypervEventfd(uint32_t conn_id, int fd);
  // KVM_IRQFD with KVM_IRQFD_FLAG_DEASSIGN: undoes AssignResampleIrqfd.
  absl::Status DeassignIrqfd(uint32_t gsi, int fd);
  // KVM_CREATE_PIT2: the 8254 on ports 0x40-0x43 (after CreateIrqchip).
  // FailedPrecondition when this KVM has no KVM_CAP_PIT2.
  absl::Status CreatePit();
  // The in-kernel PICs (after CreateIrqchip) as the ICW1-ICW4 and OCW1
  // sequence a BIOS writes would leave them: KVM_GET_IRQCHIP, the fields
  // that sequence sets, KVM_SET_IRQCHIP.
  absl::Status ProgramPics(KvmPicProgram master, KvmPicProgram slave);
  // The in-kernel PIT's channel 0 (after CreatePit) as a control word for
  // `mode` with lo/hi access and then `count` (0: 65536) leave it:
  // KVM_GET_PIT2, channel 0, KVM_SET_PIT2, which starts it counting.
  absl::Status ProgramPitChannel0(uint8_t mode, uint16_t count);
  // Whether a local APIC in the kernel can run the TSC-deadline timer
  // (KVM_CAP_TSC_DEADLINE_TIMER).
  bool HasTscDeadlineTimer() const;
  // KVM_IRQ_LINE: drives the in-kernel controllers' input `irq` (a GSI: the
  // PIC's and the IOAPIC's pin) to `level`.
  absl::Status SetIrqLine(uint32_t irq, bool level);

  int fd() const { return fd_.get(); }

 private:
  explicit KvmVm(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_KVM_KVM_H_
