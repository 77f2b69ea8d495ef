#include "vmm/host_info.h"

#include <sys/utsname.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "vmm/internal/status_macros.h"
#include "vmm/kvm/kvm.h"

namespace minivmm {
namespace {

std::string KvmModule() {
  // The vendor module that backs /dev/kvm. kvm_pvm is a software backend
  // whose guest ring 0 runs in KVM's instruction emulator.
  for (const char* module : {"kvm_pvm", "kvm_intel", "kvm_amd"}) {
    std::error_code ec;
    if (std::filesystem::exists(std::string("/sys/module/") + module, ec)) return module;
  }
  return "unknown";
}

std::string CpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (absl::StartsWith(line, "model name")) {
      auto colon = line.find(':');
      if (colon != std::string::npos)
        return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    }
  }
  return "unknown";
}

}  // namespace

absl::StatusOr<HostInfo> ProbeHost(const std::string& kvm_device) {
  ASSIGN_OR_RETURN(KvmSystem kvm, KvmSystem::Open(kvm_device));
  HostInfo info;
  info.kvm_api_version = kvm.api_version();
  for (const KvmCapability& cap : kvm.Capabilities())
    info.capabilities.push_back({cap.name, cap.value, cap.required});
  info.kvm_module = KvmModule();
  info.ring0_emulated = info.kvm_module == "kvm_pvm";
  utsname u{};
  if (uname(&u) == 0) info.host_kernel = absl::StrCat(u.sysname, " ", u.release, " ", u.machine);
  info.cpu_model = CpuModel();
  return info;
}

}  // namespace minivmm
