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
      }
    } else if (e.function == 0xb || e.function == 0x1f) {
      e.edx = machine.apic_id;
    }
  }
}

}  // namespace minivmm
