// What this host's KVM offers, for `minivmm info` and run provenance. Part
// of the public API.
#ifndef MINIVMM_VMM_HOST_INFO_H_
#define MINIVMM_VMM_HOST_INFO_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace minivmm {

struct HostCapability {
  std::string name;
  int value;      // KVM_CHECK_EXTENSION's answer; 0 = absent
  bool required;  // minivmm refuses to run without it
};

struct HostInfo {
  int kvm_api_version = 0;
  std::vector<HostCapability> capabilities;
  std::string kvm_module;   // kvm_intel, kvm_amd, kvm_pvm, or "unknown"
  bool ring0_emulated;      // guest ring-0 code runs in KVM's emulator (HOST-NOTES.md)
  std::string host_kernel;  // uname -srm
  std::string cpu_model;    // /proc/cpuinfo "model name"
};

// Errors as KvmSystem::Open (NotFound, PermissionDenied, FailedPrecondition).
absl::StatusOr<HostInfo> ProbeHost(const std::string& kvm_device = "/dev/kvm");

}  // namespace minivmm

#endif  // MINIVMM_VMM_HOST_INFO_H_
