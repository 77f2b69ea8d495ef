// Which GDT and TSS a vCPU runs on: each vCPU n gets its own from the VMM's
// boot layout (minivmm_abi/boot.h MVMM_CPU_GDT_GPA, MVMM_CPU_TSS_GPA), loaded
// into GDTR and TR at boot (vmm/vm.cc), and the guest never loads others
// under minivmm (its lgdt and ltr are on the PVH path only, for QEMU). A
// debug build checks them at every hypercall exit (RunLoop::CheckIdentity,
// the record's identity_mismatches). Pure: no KVM here.
#ifndef MINIVMM_VMM_CORE_VCPU_IDENTITY_H_
#define MINIVMM_VMM_CORE_VCPU_IDENTITY_H_

#include <cstdint>

#include "minivmm_abi/boot.h"

namespace minivmm {

struct VcpuIdentity {
  uint64_t gdt_base = 0;
  uint16_t tr_selector = 0;
  uint64_t tr_base = 0;

  bool operator==(const VcpuIdentity&) const = default;
};

// What the VMM gives vCPU `cpu` at boot.
inline VcpuIdentity BootIdentity(uint32_t cpu) {
  return {MVMM_CPU_GDT_GPA(cpu), MVMM_SEL_TSS, MVMM_CPU_TSS_GPA(cpu)};
}

}  // namespace minivmm

#endif  // MINIVMM_VMM_CORE_VCPU_IDENTITY_H_
