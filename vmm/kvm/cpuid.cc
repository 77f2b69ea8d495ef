#include "vmm/kvm/cpuid.h"

namespace minivmm {

void AdjustCpuid(std::span<kvm_cpuid_entry2> entries, const CpuidMachine& machine) {
  const bool apic = machine.local_apic_in_kernel;
  for (kvm_cpuid_entry2& e : entries) {
    if (e.function == 1) {
      e.ebx = (e.ebx & ~(0xffu << kCpuidApicIdShift)) | ((machine.apic_id & 0xff) << kCpuidApicIdShift);
      e.ecx |= kCpuidEcxHypervisor;
      if (!apic) {
        e.ecx &= ~(kCpuidEcxX2apic | kCpuidEcxTscDeadline);
        e.edx &= ~kCpuidEdxApic;
      } else if (machine.tsc_deadline_timer) {
        // KVM_GET_SUPPORTED_CPUID never reports it; KVM emulates it with an
        // in-kernel local APIC where KVM_CAP_TSC_DEADLINE_TIMER says so.
        e.ecx |= kCpuidEcxTscDeadline;
      } else {
        e.ecx &= ~kCpuidEcxTscDeadline;
      }
    } else if (e.function == 0xb || e.function == 0x1f) {
      e.edx = machine.apic_id;
    }
  }
}

}  // namespace minivmm
