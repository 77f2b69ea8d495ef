// Whether the guest sees the CPUID bits the user changed (VmConfig::
// cpu_features) as they were asked for. KVM_SET_CPUID2 takes any table, but
// a KVM may answer the guest's CPUID otherwise: kvm_pvm shows XSAVE and UMIP
// whatever the table says (docs/hosts.md). So, before the machine's vCPUs
// run, a throwaway VM (probe_vm.h) with the same CPUID executes CPUID for
// each leaf and register a change names and reports what it read; a bit the
// guest would see otherwise than asked is said in the run's notes as a
// warning, or with cpu_enforce refuses the VM, as a bit KVM does not offer
// is (ApplyCpuChoices, vmm/kvm/cpuid.h).
#ifndef MINIVMM_VMM_MACHINE_CPUID_PROBE_H_
#define MINIVMM_VMM_MACHINE_CPUID_PROBE_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "minivmm/cpu_features.h"
#include "vmm/kvm/cpuid.h"
#include "vmm/kvm/kvm.h"

namespace minivmm {

// One register of one CPUID leaf: (leaf, subleaf, register).
using CpuidRegisterAt = std::tuple<uint32_t, uint32_t, CpuidRegister>;

// The changes whose bit `seen` (the registers as the guest read them) holds
// otherwise than asked: "-name" still set, "+name" clear, except the "+name"
// in `not_given` (already said: KVM does not offer it). One line each:
// "cpu feature -xsave: this host's KVM shows it to the guest whatever
// KVM_SET_CPUID2 says (CPUID.1:ECX[26] = 1)". A change whose register is
// not in `seen` is not judged. Pure.
std::vector<std::string> CpuFeaturesSeenOtherwise(std::span<const CpuFeatureChange> changes,
                                                  const std::map<CpuidRegisterAt, uint32_t>& seen,
                                                  std::span<const std::string> not_given);

// Runs the probe for `machine`'s changes (nothing to do without any) and
// appends each line of CpuFeaturesSeenOtherwise to `not_given`, "; left
// set" or "; left clear" after it; with machine.enforce, the first refuses:
// FailedPrecondition with that line. A probe that does not report every
// register within `limit`: FailedPrecondition naming how it ended.
absl::Status CheckCpuFeaturesAsSeen(const KvmSystem& kvm, const CpuidMachine& machine,
                                    std::vector<std::string>* not_given,
                                    absl::Duration limit = absl::Seconds(5));

}  // namespace minivmm

#endif  // MINIVMM_VMM_MACHINE_CPUID_PROBE_H_
