// One VM exit, decoded once from kvm_run into a typed value (rust-vmm's
// VcpuExit). Spans point into the vCPU's kvm_run page and are valid until the
// next KVM_RUN. Nothing outside vmm/kvm/ reads kvm_run.
#ifndef MINIVMM_VMM_CORE_VCPU_EXIT_H_
#define MINIVMM_VMM_CORE_VCPU_EXIT_H_

#include <cstdint>
#include <span>
#include <variant>

namespace minivmm {

// `data` holds `count` accesses of `size` bytes each (count > 1 for rep ins/outs).
struct IoIn {
  uint16_t port;
  uint8_t size;
  std::span<uint8_t> data;  // fill it for the guest
};
struct IoOut {
  uint16_t port;
  uint8_t size;
  std::span<const uint8_t> data;
};
struct MmioRead {
  uint64_t address;
  std::span<uint8_t> data;
};
struct MmioWrite {
  uint64_t address;
  std::span<const uint8_t> data;
};
struct Hlt {};
struct IrqWindowOpen {};
struct Interrupted {};  // KVM_RUN returned EINTR or KVM_EXIT_INTR (a kick)
struct Shutdown {};     // triple fault
struct FailEntry {
  uint64_t hardware_reason;
};
struct InternalError {
  uint32_t suberror;
};
struct SystemEvent {
  uint32_t type;
};
struct UnknownExit {
  uint32_t kvm_reason;
};

using VcpuExit = std::variant<IoIn, IoOut, MmioRead, MmioWrite, Hlt, IrqWindowOpen, Interrupted,
                              Shutdown, FailEntry, InternalError, SystemEvent, UnknownExit>;

}  // namespace minivmm

#endif  // MINIVMM_VMM_CORE_VCPU_EXIT_H_
