// What this host's KVM offers, for `minivmm info` and run provenance. Part
// of the public API.
#ifndef MINIVMM_HOST_INFO_H_
#define MINIVMM_HOST_INFO_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace minivmm {

struct HostCapability {
  std::string name;
  int value;      // KVM_CHECK_EXTENSION's answer; 0 = absent
  bool required;  // minivmm refuses to run without it
};

// One behaviour of the host's KVM as a probe run observed it.
struct ProbedBehaviour {
  std::optional<bool> value;  // nullopt: the probe could not tell
  std::string evidence;       // one line: what was observed, or why nothing could be
  bool measured() const { return value.has_value(); }
};

// What a short guest run (ProbeHostBehaviour, the guest's workload=hostprobe)
// measured about the KVM underneath (docs/hosts.md). Each answer is
// measured, never inferred from the module name; one the probe could not
// decide stays unmeasured.
struct HostBehaviour {
  // Guest ring-0 code runs in KVM's instruction emulator: the host's
  // insn_emulation counter grew by at least `loop_insns` over a run that
  // executed a ring-0 loop of exactly `loop_insns` instructions.
  ProbedBehaviour ring0_emulated;
  // Ring-3 SSE with CR0.TS=1 raises #NM (the guest's boot probe, kernel.ring3_nm).
  ProbedBehaviour ring3_nm;
  // `vmcall` with an unused KVM hypercall number returns to the guest with
  // KVM's answer in RAX (-1000, -KVM_ENOSYS): KVM handles it in the kernel.
  // false: the vCPU never came back from it (it spins) or took an exception.
  ProbedBehaviour vmcall_in_kernel;

  uint64_t loop_insns = 0;                 // the ring-0 loop's length; 0 if it did not run
  std::optional<uint64_t> insn_emulation;  // the host's insn_emulation delta over the probe run
  std::optional<int64_t> vmcall_rax;       // RAX after vmcall, when it returned
  absl::Duration vmcall_wait;  // when vmcall did not return: from vmcall to the end of the run
  absl::Duration elapsed;      // wall time of the whole probe (every attempt)
  int runs = 0;                // guest runs the probe made (see ProbeHostBehaviour)
  // Not measured now but read from a saved probe of this very host (the
  // CLI's probe cache, docs/run-record.md); ProbeHostBehaviour leaves it false.
  bool cached = false;
};

struct HostInfo {
  int kvm_api_version = 0;
  std::vector<HostCapability> capabilities;
  std::string kvm_module;  // kvm_intel, kvm_amd, kvm_pvm, or "unknown" (from /sys/module)
  // Every readable parameter of `kvm` and of the vendor module, keyed
  // "module.name" (kvm_amd.npt, kvm.tdp_mmu), as /sys/module/*/parameters
  // gives it: together with kvm_module, which KVM configuration this is. Two
  // hosts with one module but other parameters (kvm_amd with npt=0 takes
  // KVM's shadow MMU instead of nested paging) are two KVMs to compare.
  std::map<std::string, std::string> kvm_parameters;
  std::string host_kernel;  // uname -srm
  std::string cpu_model;    // /proc/cpuinfo "model name"
  // Measured by ProbeHostBehaviour; ProbeHost leaves it empty (it runs no guest).
  std::optional<HostBehaviour> behaviour;
};

// Errors as KvmSystem::Open (NotFound, PermissionDenied, FailedPrecondition).
// Fast: opens the device and reads /sys and /proc; runs no guest.
absl::StatusOr<HostInfo> ProbeHost(const std::string& kvm_device = "/dev/kvm");

// Boots `guest_elf` (empty: DefaultGuestKernelPath(), the built-in guest,
// which has workload=hostprobe) with 16 MiB of RAM and measures
// HostBehaviour. Where vmcall returns, that is one guest run (as long as
// the guest takes to boot). Where it does not, the run is ended by a time
// limit 0.4 s after it started (again with 3 s if the guest had not waited
// 250 ms in vmcall by then, e.g. on a busy machine), and one more run
// without the vmcall judges ring 0: about 0.45 s on kvm_pvm. Errors as
// Vm::Create and Vm::Run; a probe that ran but could not decide something
// returns it unmeasured, with the reason as its evidence.
absl::StatusOr<HostBehaviour> ProbeHostBehaviour(const std::string& guest_elf = "",
                                                 const std::string& kvm_device = "/dev/kvm");

}  // namespace minivmm

#endif  // MINIVMM_HOST_INFO_H_
