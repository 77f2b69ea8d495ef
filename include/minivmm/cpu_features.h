// The CPUID feature bits a user can take away from the guest or give it
// (`minivmm run --cpu-features +x2apic,-pcid`, VmConfig::cpu_features,
// Python's cpu_features=, and QEMU's `-cpu MODEL,+name,-name` through
// scripts/minivmm-qemu), and the vendor string (`--cpu-vendor`). One list:
// the CLI's help, the parser, the CPUID code and docs/machines.md come from
// kCpuFeatures. Part of the public API.
#ifndef MINIVMM_CPU_FEATURES_H_
#define MINIVMM_CPU_FEATURES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace minivmm {

enum class CpuidRegister { kEax, kEbx, kEcx, kEdx };

// "eax", "ebx", "ecx", "edx".
std::string_view CpuidRegisterName(CpuidRegister reg);

struct CpuFeature {
  std::string_view name;  // QEMU's name for the bit
  uint32_t leaf;
  uint32_t subleaf;
  CpuidRegister reg;
  uint8_t bit;
  std::string_view summary;
};

// The bits kvm-unit-tests' x86 tests ask for or take away, and the few
// their tests look at beside them.
inline constexpr CpuFeature kCpuFeatures[] = {
    {"vmx", 1, 0, CpuidRegister::kEcx, 5, "Intel VMX (nested virtualization)"},
    {"pcid", 1, 0, CpuidRegister::kEcx, 17, "process-context identifiers"},
    {"x2apic", 1, 0, CpuidRegister::kEcx, 21, "x2APIC mode of the local APIC (pc machine)"},
    {"tsc-deadline", 1, 0, CpuidRegister::kEcx, 24,
     "the local APIC timer's TSC-deadline mode (pc machine)"},
    {"xsave", 1, 0, CpuidRegister::kEcx, 26, "XSAVE/XRSTOR and XCR0"},
    {"invpcid", 7, 0, CpuidRegister::kEbx, 10, "INVPCID"},
    {"umip", 7, 0, CpuidRegister::kEcx, 2, "user-mode instruction prevention"},
    {"pku", 7, 0, CpuidRegister::kEcx, 3, "protection keys for user pages"},
    {"la57", 7, 0, CpuidRegister::kEcx, 16, "5-level paging"},
    {"svm", 0x80000001, 0, CpuidRegister::kEcx, 2, "AMD SVM (nested virtualization)"},
    {"skinit", 0x80000001, 0, CpuidRegister::kEcx, 12, "SKINIT/STGI"},
    {"rdtscp", 0x80000001, 0, CpuidRegister::kEdx, 27, "RDTSCP"},
    {"npt", 0x8000000a, 0, CpuidRegister::kEdx, 0, "SVM nested paging"},
};

// nullptr for a name not in kCpuFeatures.
const CpuFeature* CpuFeatureNamed(std::string_view name);

// One "+name" (give the guest the bit) or "-name" (take it away).
struct CpuFeatureChange {
  std::string name;
  bool on = false;
  bool operator==(const CpuFeatureChange&) const = default;
};

// "+x2apic,-pcid" -> its changes, in order (a later one for the same bit
// wins). InvalidArgument for an empty item, one without its sign, or a name
// not in kCpuFeatures (the message lists them).
absl::StatusOr<std::vector<CpuFeatureChange>> ParseCpuFeatures(std::string_view list);

// The changes written back as ParseCpuFeatures reads them ("" for none).
std::string CpuFeaturesText(const std::vector<CpuFeatureChange>& changes);

// A CPUID vendor string: exactly 12 printable ASCII characters
// ("GenuineIntel", "AuthenticAMD"); InvalidArgument otherwise.
absl::Status CheckCpuVendor(std::string_view vendor);

}  // namespace minivmm

#endif  // MINIVMM_CPU_FEATURES_H_
