// What the VMM serves of Hyper-V's synthetic interrupt controller (SynIC)
// with VmConfig::hyperv. KVM runs SynIC in the kernel and tells the VMM two
// things through KVM_EXIT_HYPERV: that the guest wrote one of a vCPU's SynIC
// control MSRs (SCONTROL, SIEFP, SIMP: where its event flags and message
// pages now are), and a hypercall KVM leaves to the VMM (HvPostMessage, and
// HvSignalEvent for a connection KVM has no eventfd for). The run loop hands
// both to the machine's HypervHost (Machine::hyperv_host), on the exiting
// vCPU's thread, under the run loop's lock when there is more than one vCPU.
#ifndef MINIVMM_VMM_CORE_HYPERV_HOST_H_
#define MINIVMM_VMM_CORE_HYPERV_HOST_H_

#include <cstdint>

namespace minivmm {

// The vCPU's SynIC control MSRs after the write (KVM_EXIT_HYPERV_SYNIC),
// laid out as KVM's kvm_hyperv_exit.u.synic, so that the exit points into
// kvm_run instead of carrying a copy (vmm/kvm/vcpu.h checks the layout).
struct SynicControl {
  uint32_t msr = 0;  // the one written
  uint32_t pad = 0;
  uint64_t control = 0;   // SCONTROL: bit 0 enables SynIC
  uint64_t evt_page = 0;  // SIEFP: page address | bit 0 enable
  uint64_t msg_page = 0;  // SIMP: page address | bit 0 enable
};

// A hypercall KVM left to the VMM (KVM_EXIT_HYPERV_HCALL), laid out as
// kvm_hyperv_exit.u.hcall, as SynicControl is.
struct HypervHypercall {
  uint64_t input = 0;           // the control word: call code in bits 0-15, fast in bit 16
  uint64_t result = 0;          // the status the guest gets (the run loop writes it)
  uint64_t params[2] = {0, 0};  // input and output: guest-physical addresses, or values if fast
};

// Hyper-V's hypercall status codes (TLFS "HV_STATUS"), the ones minivmm gives.
inline constexpr uint16_t kHvStatusSuccess = 0x0;
inline constexpr uint16_t kHvStatusInvalidHypercallCode = 0x2;
inline constexpr uint16_t kHvStatusInvalidHypercallInput = 0x3;
inline constexpr uint16_t kHvStatusInvalidAlignment = 0x4;
inline constexpr uint16_t kHvStatusInsufficientMemory = 0xb;
inline constexpr uint16_t kHvStatusInvalidPortId = 0x11;
inline constexpr uint16_t kHvStatusInvalidConnectionId = 0x12;
inline constexpr uint16_t kHvStatusInsufficientBuffers = 0x13;

class HypervHost {
 public:
  virtual ~HypervHost() = default;
  // vCPU `cpu` (its VP index: KVM's default, the vCPU's number) wrote a
  // SynIC control MSR.
  virtual void SynicControlWritten(uint32_t cpu, const SynicControl& control) = 0;
  // The status the guest's hypercall on vCPU `cpu` returns.
  virtual uint16_t Hypercall(uint32_t cpu, const HypervHypercall& call) = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_CORE_HYPERV_HOST_H_
