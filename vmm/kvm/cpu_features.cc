#include "minivmm/cpu_features.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace minivmm {

std::string_view CpuidRegisterName(CpuidRegister reg) {
  static constexpr std::string_view kNames[] = {"eax", "ebx", "ecx", "edx"};
  return kNames[static_cast<int>(reg)];
}

const CpuFeature* CpuFeatureNamed(std::string_view name) {
  for (const CpuFeature& f : kCpuFeatures) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

absl::StatusOr<std::vector<CpuFeatureChange>> ParseCpuFeatures(std::string_view list) {
  std::vector<CpuFeatureChange> changes;
  if (list.empty()) return changes;
  for (absl::string_view piece : absl::StrSplit(absl::string_view(list.data(), list.size()), ',')) {
    const std::string_view item(piece.data(), piece.size());
    if (item.size() < 2 || (item[0] != '+' && item[0] != '-')) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "cpu feature '%s': write +NAME to give the guest a feature or -NAME to take it away",
          item));
    }
    const std::string_view name = item.substr(1);
    if (CpuFeatureNamed(name) == nullptr) {
      std::vector<std::string> names;
      for (const CpuFeature& f : kCpuFeatures) names.emplace_back(f.name);
      return absl::InvalidArgumentError(absl::StrFormat(
          "cpu feature '%s' is not one minivmm knows (%s)", name, absl::StrJoin(names, ", ")));
    }
    changes.push_back({std::string(name), item[0] == '+'});
  }
  return changes;
}

std::string CpuFeaturesText(const std::vector<CpuFeatureChange>& changes) {
  return absl::StrJoin(changes, ",", [](std::string* out, const CpuFeatureChange& c) {
    absl::StrAppend(out, c.on ? "+" : "-", c.name);
  });
}

absl::Status CheckCpuVendor(std::string_view vendor) {
  bool printable = vendor.size() == 12;
  for (char c : vendor) printable = printable && c >= 0x20 && c < 0x7f;
  if (!printable) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cpu vendor '%s': a CPUID vendor string is exactly 12 printable ASCII characters "
        "(GenuineIntel, AuthenticAMD)",
        vendor));
  }
  return absl::OkStatus();
}

}  // namespace minivmm
