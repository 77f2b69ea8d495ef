// One VM exit, decoded once from kvm_run into a typed value (rust-vmm's
// VcpuExit). Each type names the ExitReason it is counted under (kReason);
// RunFailed is not an exit (KVM_RUN itself failed) and is never counted.
// Spans point into the vCPU's kvm_run page and are valid until the next
// KVM_RUN. Nothing outside vmm/kvm/ reads kvm_run.
#ifndef MINIVMM_VMM_CORE_VCPU_EXIT_H_
#define MINIVMM_VMM_CORE_VCPU_EXIT_H_

#include <cstdint>
#include <span>
#include <type_traits>
#include <variant>

#include "minivmm/exit_stats.h"
#include "vmm/core/hyperv_host.h"

namespace minivmm {

// `data` holds `count` accesses of `size` bytes each (count > 1 for rep ins/outs).
struct IoIn {
  static constexpr ExitReason kReason = ExitReason::kIo;
  uint16_t port;
  uint8_t size;
  std::span<uint8_t> data;  // fill it for the guest
};
struct IoOut {
  static constexpr ExitReason kReason = ExitReason::kIo;
  uint16_t port;
  uint8_t size;
  std::span<const uint8_t> data;
};
struct MmioRead {
  static constexpr ExitReason kReason = ExitReason::kMmio;
  uint64_t address;
  std::span<uint8_t> data;
};
struct MmioWrite {
  static constexpr ExitReason kReason = ExitReason::kMmio;
  uint64_t address;
  std::span<const uint8_t> data;
};
struct Hlt {
  static constexpr ExitReason kReason = ExitReason::kHlt;
};
struct IrqWindowOpen {
  static constexpr ExitReason kReason = ExitReason::kIrqWindowOpen;
};
// KVM_RUN returned EINTR or KVM_EXIT_INTR (a kick).
struct Interrupted {
  static constexpr ExitReason kReason = ExitReason::kIntr;
};
// Triple fault.
struct Shutdown {
  static constexpr ExitReason kReason = ExitReason::kShutdown;
};
struct FailEntry {
  static constexpr ExitReason kReason = ExitReason::kFailEntry;
  uint64_t hardware_reason;
};
struct InternalError {
  static constexpr ExitReason kReason = ExitReason::kInternalError;
  uint32_t suberror;
};
struct SystemEvent {
  static constexpr ExitReason kReason = ExitReason::kSystemEvent;
  uint32_t type;
};
// KVM_EXIT_HYPERV, with Hyper-V's enlightenments (VmConfig::hyperv): a
// SynIC control MSR written (type 1: `synic`), a hypercall KVM leaves to the
// VMM (type 2: `hcall`, whose `result` the guest gets), a synthetic debugger
// MSR (type 3). Both point into kvm_run (valid until the next KVM_RUN), so
// that this rare exit keeps every exit's VcpuExit as small as it was.
struct HypervExit {
  static constexpr ExitReason kReason = ExitReason::kHyperv;
  uint32_t type;
  const SynicControl* synic = nullptr;
  HypervHypercall* hcall = nullptr;
};
// KVM_EXIT_IOAPIC_EOI, with KVM's split irqchip (the q35 machine): a local
// APIC in the kernel took the EOI of `vector`, which KVM's GSI routes say a
// level-triggered entry of the VMM's IOAPIC sent; the IOAPIC clears that
// entry's remote IRR (devices/ioapic.h).
struct IoapicEoi {
  static constexpr ExitReason kReason = ExitReason::kIoapicEoi;
  uint8_t vector;
};
struct UnknownExit {
  static constexpr ExitReason kReason = ExitReason::kUnknown;
  uint32_t kvm_reason;
};
// KVM_RUN failed with `error` (an errno other than EINTR/EAGAIN).
struct RunFailed {
  int error;
};

using VcpuExit = std::variant<IoIn, IoOut, MmioRead, MmioWrite, Hlt, IrqWindowOpen, Interrupted,
                              Shutdown, FailEntry, InternalError, SystemEvent, HypervExit,
                              IoapicEoi, UnknownExit, RunFailed>;

// The reason `exit` is counted under; not for RunFailed.
inline ExitReason ReasonOf(const VcpuExit& exit) {
  return std::visit(
      [](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, RunFailed>) {
          return ExitReason::kCount;
        } else {
          return T::kReason;
        }
      },
      exit);
}

}  // namespace minivmm

#endif  // MINIVMM_VMM_CORE_VCPU_EXIT_H_
