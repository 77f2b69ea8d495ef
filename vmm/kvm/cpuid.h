// One vCPU's CPUID, made from KVM_GET_SUPPORTED_CPUID: what KVM can offer,
// corrected for what the machine has (docs/design.md "CPUID"). Pure: no
// ioctl, tested without KVM.
#ifndef MINIVMM_VMM_KVM_CPUID_H_
#define MINIVMM_VMM_KVM_CPUID_H_

#include <linux/kvm.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "minivmm/cpu_features.h"

namespace minivmm {

// What a vCPU's CPUID says of the machine around it.
struct CpuidMachine {
  uint32_t apic_id = 0;  // the vCPU's number
  // A local APIC in the kernel (KVM_CREATE_IRQCHIP). The built-in machine
  // has none: no APIC at all, so neither the APIC nor the x2APIC bit.
  bool local_apic_in_kernel = false;
  // With a local APIC in the kernel: its timer's TSC-deadline mode
  // (KVM_CAP_TSC_DEADLINE_TIMER), advertised in CPUID.1:ECX[24].
  bool tsc_deadline_timer = false;
  // The user's changes (VmConfig::cpu_features and cpu_vendor), applied by
  // ApplyCpuChoices after AdjustCpuid; empty: none.
  std::span<const CpuFeatureChange> features;
  std::string_view vendor;
  // A "+name" that cannot be given refuses the VM (QEMU's `enforce`);
  // otherwise it is left clear and said, as QEMU warns.
  bool enforce = false;
  // Hyper-V's enlightenments (VmConfig::hyperv): KVM's Hyper-V leaves
  // (KVM_GET_SUPPORTED_HV_CPUID) from 0x40000000, KVM's own moved up by
  // 0x100 (AddHypervLeaves).
  bool hyperv = false;
};

// CPUID.1:EBX[31:24] initial APIC ID, CPUID.1:ECX and :EDX feature bits,
// and the x2APIC ID of leaves 0xB and 0x1F (EDX of every subleaf).
inline constexpr uint32_t kCpuidApicIdShift = 24;
inline constexpr uint32_t kCpuidEcxX2apic = 1u << 21;
inline constexpr uint32_t kCpuidEcxTscDeadline = 1u << 24;
inline constexpr uint32_t kCpuidEcxHypervisor = 1u << 31;
inline constexpr uint32_t kCpuidEdxApic = 1u << 9;

// Turns `entries` (KVM_GET_SUPPORTED_CPUID's) into the vCPU's own: leaf 1's
// initial APIC ID is `apic_id` (its low 8 bits), and leaves 0xB and 0x1F
// give `apic_id` as the x2APIC ID in every subleaf; the APIC, x2APIC and
// TSC-deadline bits are set only with a local APIC in the kernel (KVM
// reports x2APIC as what it can emulate, which needs one; the TSC deadline
// it never reports, so it is set where `tsc_deadline_timer` says KVM has
// it); the hypervisor bit is set. Every other entry is KVM's. (KVM keeps
// the APIC bit equal to IA32_APIC_BASE's enable bit once the vCPU runs:
// KvmVcpu::SetCpuid disables that MSR too.)
void AdjustCpuid(std::span<kvm_cpuid_entry2> entries, const CpuidMachine& machine);

// Then the user's changes, in order: "-name" clears the bit (if KVM has the
// leaf at all); "+name" keeps it where it is set in `entries` as AdjustCpuid
// left them. Where it is clear (KVM cannot give it, or the machine has not
// the hardware it describes: x2APIC without a local APIC in the kernel), it
// stays clear and "cpu feature +NAME: ...; left clear" goes to `not_given`,
// or with machine.enforce the VM is refused: FailedPrecondition, "cpu
// feature +NAME: ...". A `vendor` (12 characters,
// CheckCpuVendor) replaces leaf 0's and leaf 0x80000000's EBX, EDX, ECX, as
// QEMU's vendor= does. InvalidArgument for a name not in kCpuFeatures or a
// bad vendor.
absl::Status ApplyCpuChoices(std::span<kvm_cpuid_entry2> entries, const CpuidMachine& machine,
                             std::vector<std::string>* not_given = nullptr);

// The hypervisor leaves with Hyper-V's enlightenments, as QEMU's
// hv_passthrough lays them out: `hv` (KVM_GET_SUPPORTED_HV_CPUID's leaves,
// 0x40000000 up: the "Linux KVM Hv" vendor, Hyper-V's features, its
// recommendations and limits) where a Hyper-V guest looks, and KVM's own
// leaves (its signature "KVMKVMKVM" and paravirtual features) moved from
// 0x40000000 to 0x40000100, their maximum leaf with them, where KVM and Linux
// look next.
inline constexpr uint32_t kCpuidHypervisorBase = 0x40000000;
inline constexpr uint32_t kCpuidKvmBaseBesideHyperv = 0x40000100;
void AddHypervLeaves(std::vector<kvm_cpuid_entry2>& entries, std::span<const kvm_cpuid_entry2> hv);

}  // namespace minivmm

#endif  // MINIVMM_VMM_KVM_CPUID_H_
