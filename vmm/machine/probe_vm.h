// A throwaway VM for a host probe (pc_host_check.h, cpuid_probe.h): 64 KiB
// of RAM at 0 for a few bytes of code the probe writes, one vCPU entered in
// 32-bit protected mode with paging off, run on the calling thread, each
// KVM_RUN bounded by a watchdog that kicks a vCPU that never comes back.
#ifndef MINIVMM_VMM_MACHINE_PROBE_VM_H_
#define MINIVMM_VMM_MACHINE_PROBE_VM_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "minivmm/guest_memory.h"
#include "vmm/core/vcpu_exit.h"
#include "vmm/kvm/kvm.h"
#include "vmm/memory/mapped_memory.h"

namespace minivmm {

// How a probe's run ended, for its message: "a 1-byte write to port 0x80",
// "a HLT", "KVM_EXIT_INTERNAL_ERROR, suberror 1", "no exit within the time
// limit", ...
std::string DescribeExit(const VcpuExit& exit);

class ProbeVm {
 public:
  static constexpr uint64_t kMemoryBytes = 64 * 1024;

  // With `irqchip`, KVM's in-kernel interrupt controllers (a local APIC for
  // the vCPU), as the PC machine has them. Errors: KVM's own, as they come.
  static absl::StatusOr<std::unique_ptr<ProbeVm>> Create(const KvmSystem& kvm, bool irqchip);
  ~ProbeVm();
  ProbeVm(const ProbeVm&) = delete;
  ProbeVm& operator=(const ProbeVm&) = delete;

  const GuestMemory& memory() const { return memory_; }
  KvmVcpu& vcpu() { return *vcpu_; }

  // The vCPU at `eip` in 32-bit protected mode (KvmVcpu::SetProtectedModeBoot),
  // bound to the calling thread, which then calls Run.
  absl::Status Start(uint32_t eip);
  // One KVM_RUN; a vCPU still in the guest after `limit` is kicked out
  // (Interrupted). The exit's data lives until the next Run.
  VcpuExit Run(absl::Duration limit);

 private:
  ProbeVm(MappedMemory ram, KvmVm vm)
      : ram_(std::move(ram)), memory_(ram_.span()), vm_(std::move(vm)) {}

  MappedMemory ram_;
  GuestMemory memory_;
  KvmVm vm_;
  std::unique_ptr<KvmVcpu> vcpu_;
  bool bound_ = false;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_MACHINE_PROBE_VM_H_
