// The exits KVM handles in the kernel, as its kvm:kvm_exit tracepoint
// reports each of them (VmConfig::kernel_exits, `minivmm run
// --kernel-exits`, docs/kernel-exits.md). Part of the public API.
#ifndef MINIVMM_KERNEL_EXITS_H_
#define MINIVMM_KERNEL_EXITS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace minivmm {

// One vCPU's exits over a run, every one KVM made, whether it reached
// minivmm or not.
struct KernelExitCounts {
  // kvm:kvm_exit records read for this vCPU's thread.
  uint64_t exits = 0;
  // Records the ring buffer lost (PERF_RECORD_LOST): the counts are then
  // short by that many; 0 in every test.
  uint64_t lost = 0;
  // By hardware exit reason, named as the tracepoint (and kvm_stat) names
  // it: SVM's "cpuid", "msr", "hlt", "io", "npf", ...; VMX's "CPUID",
  // "MSR_READ", "HLT", "IO_INSTRUCTION", "EPT_VIOLATION", ...
  std::map<std::string, uint64_t> by_reason;
  // By (reason, guest RIP at the exit).
  std::map<std::pair<std::string, uint64_t>, uint64_t> by_reason_rip;

  void Add(const KernelExitCounts& other);
};

// The exits of one phase of the run, every vCPU's: a phase ends where the
// guest ends a console line (kvm-unit-tests' `vmexit` prints one line per
// sub-test), and the last one at the end of the run.
struct KernelExitPhase {
  std::string line;  // the line that ended it ("" for the last phase)
  KernelExitCounts counts;
};

}  // namespace minivmm

#endif  // MINIVMM_KERNEL_EXITS_H_
