#include "vmm/kvm/cpuid.h"

#include <cstring>

#include "absl/strings/str_format.h"

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

void AddHypervLeaves(std::vector<kvm_cpuid_entry2>& entries, std::span<const kvm_cpuid_entry2> hv) {
  constexpr uint32_t kShift = kCpuidKvmBaseBesideHyperv - kCpuidHypervisorBase;
  for (kvm_cpuid_entry2& e : entries) {
    if (e.function < kCpuidHypervisorBase || e.function >= kCpuidKvmBaseBesideHyperv) continue;
    if (e.function == kCpuidHypervisorBase) e.eax += kShift;  // its maximum leaf
    e.function += kShift;
  }
  entries.insert(entries.end(), hv.begin(), hv.end());
}

namespace {

kvm_cpuid_entry2* FindEntry(std::span<kvm_cpuid_entry2> entries, uint32_t leaf, uint32_t subleaf) {
  for (kvm_cpuid_entry2& e : entries) {
    if (e.function == leaf && e.index == subleaf) return &e;
  }
  return nullptr;
}

uint32_t& Register(kvm_cpuid_entry2& e, CpuidRegister reg) {
  switch (reg) {
    case CpuidRegister::kEax:
      return e.eax;
    case CpuidRegister::kEbx:
      return e.ebx;
    case CpuidRegister::kEcx:
      return e.ecx;
    case CpuidRegister::kEdx:
      break;
  }
  return e.edx;
}

}  // namespace

absl::Status ApplyCpuChoices(std::span<kvm_cpuid_entry2> entries, const CpuidMachine& machine,
                             std::vector<std::string>* not_given) {
  for (const CpuFeatureChange& change : machine.features) {
    const CpuFeature* f = CpuFeatureNamed(change.name);
    if (f == nullptr)
      return absl::InvalidArgumentError(
          absl::StrFormat("cpu feature '%s' is not one minivmm knows", change.name));
    kvm_cpuid_entry2* e = FindEntry(entries, f->leaf, f->subleaf);
    const uint32_t mask = 1u << f->bit;
    if (!change.on) {
      if (e != nullptr) Register(*e, f->reg) &= ~mask;
    } else if (e == nullptr || (Register(*e, f->reg) & mask) == 0) {
      const bool apic_bit = f->leaf == 1 && f->reg == CpuidRegister::kEcx &&
                            (mask & (kCpuidEcxX2apic | kCpuidEcxTscDeadline)) != 0;
      const std::string why =
          apic_bit && !machine.local_apic_in_kernel
              ? absl::StrFormat("cpu feature +%s: this machine has no local APIC (the pc machine "
                                "has one)",
                                change.name)
              : absl::StrFormat(
                    "cpu feature +%s: this host's KVM does not offer it (KVM_GET_SUPPORTED_CPUID)",
                    change.name);
      if (machine.enforce) return absl::FailedPreconditionError(why);
      if (not_given != nullptr) not_given->push_back(why + "; left clear");
    }
  }
  if (!machine.vendor.empty()) {
    if (absl::Status vendor = CheckCpuVendor(machine.vendor); !vendor.ok()) return vendor;
    for (uint32_t leaf : {0u, 0x80000000u}) {
      kvm_cpuid_entry2* e = FindEntry(entries, leaf, 0);
      if (e == nullptr) continue;
      std::memcpy(&e->ebx, machine.vendor.data(), 4);
      std::memcpy(&e->edx, machine.vendor.data() + 4, 4);
      std::memcpy(&e->ecx, machine.vendor.data() + 8, 4);
    }
  }
  return absl::OkStatus();
}

}  // namespace minivmm
