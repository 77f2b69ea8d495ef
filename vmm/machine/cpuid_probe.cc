#include "vmm/machine/cpuid_probe.h"

#include <memory>
#include <set>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "vmm/core/status_macros.h"
#include "vmm/machine/probe_vm.h"

namespace minivmm {
namespace {

constexpr uint32_t kCpuidProbeCodeGpa = 0x1000;
constexpr uint8_t kCpuidProbePort = 0x80;

void PutLittle32(std::vector<uint8_t>& code, uint32_t v) {
  for (int i = 0; i < 4; ++i) code.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// For each register: mov eax, leaf; mov ecx, subleaf; cpuid; mov eax, REG;
// out kCpuidProbePort, eax. Then hlt.
std::vector<uint8_t> ProbeCode(std::span<const CpuidRegisterAt> registers) {
  std::vector<uint8_t> code;
  for (const auto& [leaf, subleaf, reg] : registers) {
    code.push_back(0xb8);
    PutLittle32(code, leaf);
    code.push_back(0xb9);
    PutLittle32(code, subleaf);
    code.insert(code.end(), {0x0f, 0xa2});
    switch (reg) {
      case CpuidRegister::kEax:
        break;
      case CpuidRegister::kEbx:
        code.insert(code.end(), {0x89, 0xd8});
        break;
      case CpuidRegister::kEcx:
        code.insert(code.end(), {0x89, 0xc8});
        break;
      case CpuidRegister::kEdx:
        code.insert(code.end(), {0x89, 0xd0});
        break;
    }
    code.insert(code.end(), {0xe7, kCpuidProbePort});
  }
  code.push_back(0xf4);
  return code;
}

// Each feature's last change (a later one for the same bit wins).
std::map<std::string, bool> LastChangeOfEach(std::span<const CpuFeatureChange> changes) {
  std::map<std::string, bool> last;
  for (const CpuFeatureChange& c : changes) last[c.name] = c.on;
  return last;
}

}  // namespace

std::vector<std::string> CpuFeaturesSeenOtherwise(std::span<const CpuFeatureChange> changes,
                                                  const std::map<CpuidRegisterAt, uint32_t>& seen,
                                                  std::span<const std::string> not_given) {
  std::vector<std::string> lines;
  for (const auto& [name, on] : LastChangeOfEach(changes)) {
    const CpuFeature* f = CpuFeatureNamed(name);
    if (f == nullptr) continue;
    auto it = seen.find({f->leaf, f->subleaf, f->reg});
    if (it == seen.end()) continue;
    const bool set = ((it->second >> f->bit) & 1) != 0;
    if (set == on) continue;
    const std::string prefix = absl::StrFormat("cpu feature +%s:", name);
    bool said = false;
    for (const std::string& line : not_given) said |= line.starts_with(prefix);
    if (said) continue;
    const std::string reg = absl::AsciiStrToUpper(std::string(CpuidRegisterName(f->reg)));
    lines.push_back(absl::StrFormat(
        "cpu feature %c%s: this host's KVM %s the guest whatever KVM_SET_CPUID2 says "
        "(CPUID.%x:%s[%u] = %d)",
        on ? '+' : '-', name, on ? "hides it from" : "shows it to", f->leaf, reg, f->bit,
        set ? 1 : 0));
  }
  return lines;
}

absl::Status CheckCpuFeaturesAsSeen(const KvmSystem& kvm, const CpuidMachine& machine,
                                    std::vector<std::string>* not_given, absl::Duration limit) {
  std::set<CpuidRegisterAt> wanted;
  for (const CpuFeatureChange& c : machine.features) {
    if (const CpuFeature* f = CpuFeatureNamed(c.name); f != nullptr)
      wanted.insert({f->leaf, f->subleaf, f->reg});
  }
  if (wanted.empty()) return absl::OkStatus();
  const std::vector<CpuidRegisterAt> registers(wanted.begin(), wanted.end());

  ASSIGN_OR_RETURN(std::unique_ptr<ProbeVm> probe,
                   ProbeVm::Create(kvm, /*irqchip=*/machine.local_apic_in_kernel));
  // The same table as the machine's vCPUs, without what only they need: a
  // refusal (enforce) or warning of ApplyCpuChoices came already.
  CpuidMachine same = machine;
  same.enforce = false;
  std::vector<std::string> ignored;
  RETURN_IF_ERROR(probe->vcpu().SetCpuid(kvm.fd(), same, &ignored));
  const std::vector<uint8_t> code = ProbeCode(registers);
  if (!probe->memory().Write(GuestAddress(kCpuidProbeCodeGpa), std::span(code)))
    return absl::InternalError("the CPUID probe does not fit its memory");
  RETURN_IF_ERROR(probe->Start(kCpuidProbeCodeGpa));

  std::map<CpuidRegisterAt, uint32_t> seen;
  for (const CpuidRegisterAt& at : registers) {
    const VcpuExit exit = probe->Run(limit);
    const auto* out = std::get_if<IoOut>(&exit);
    if (out == nullptr || out->port != kCpuidProbePort || out->size != 4 || out->data.size() != 4)
      return absl::FailedPreconditionError(
          absl::StrFormat("--cpu-features: the probe that reads the guest's CPUID ended in %s",
                          DescribeExit(exit)));
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) value |= uint32_t{out->data[i]} << (8 * i);
    seen[at] = value;
  }
  const std::vector<std::string> otherwise = CpuFeaturesSeenOtherwise(
      machine.features, seen,
      not_given == nullptr ? std::span<const std::string>() : std::span(*not_given));
  for (const std::string& line : otherwise) {
    if (machine.enforce) return absl::FailedPreconditionError(line);
    if (not_given != nullptr)
      not_given->push_back(line +
                           (line.starts_with("cpu feature -") ? "; left set" : "; left clear"));
  }
  return absl::OkStatus();
}

}  // namespace minivmm
