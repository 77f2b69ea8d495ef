// The exits KVM handles in the kernel, as its kvm:kvm_exit tracepoint
// reports each of them (VmConfig::kernel_exits, `minivmm run
// --kernel-exits`, docs/design.md "In-kernel exits"). Part of the public
// API.
#ifndef MINIVMM_KERNEL_EXITS_H_
#define MINIVMM_KERNEL_EXITS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

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
  // Of those, the exits after which KVM_RUN returned to minivmm (the last
  // exit of each KVM_RUN, kvm:kvm_userspace_exit); the rest KVM handled in
  // the kernel.
  std::map<std::string, uint64_t> to_vmm_by_reason;
  std::map<std::pair<std::string, uint64_t>, uint64_t> to_vmm_by_reason_rip;
  // With stacks (VmConfig::record_sites where the host allows them,
  // RunResult::kernel_exit_stacks): by (reason, the guest's frame-pointer
  // stack at the exit: the RIP, then return addresses, as ExitSite::frames;
  // the RIP alone at CPL 3), and of those the exits that reached minivmm.
  std::map<std::pair<std::string, std::vector<uint64_t>>, uint64_t> by_reason_stack;
  std::map<std::pair<std::string, std::vector<uint64_t>>, uint64_t> to_vmm_by_reason_stack;
  // With stacks, exits that got none: the BPF program's ring was full, or
  // its record did not match the tracepoint's (its RIP differed). 0 in every
  // test.
  uint64_t unstacked = 0;
  // By (reason, detail): what KVM's own tracepoint for the exit's work said
  // of it, for the exits that have one: "rdmsr 0x10", "wrmsr 0x6e0"
  // (kvm:kvm_msr), "cr0 write", "cr8 read" (kvm:kvm_cr), "in 0x70",
  // "out 0x3f8" (kvm:kvm_pio), "hypercall 12" (kvm:kvm_hypercall).
  std::map<std::pair<std::string, std::string>, uint64_t> by_reason_detail;
  // KVM_RUN's returns to minivmm (kvm:kvm_userspace_exit), by minivmm's
  // name for each (ExitReasonName: "io", "hlt", "intr", ...; "failed" for
  // an error other than EINTR and EAGAIN): KVM's own count of the exits
  // RunResult::per_vcpu counts, and equal to it.
  std::map<std::string, uint64_t> returns;

  void Add(const KernelExitCounts& other);
};

// The exits of one phase of the run, every vCPU's: a phase ends where the
// guest says it finished something (Machine::EndPhasesWith): on the PC
// machine where it ends a console line (kvm-unit-tests' `vmexit` prints
// one line per sub-test), on the built-in machine where it sends a report
// record; the last one at the end of the run.
struct KernelExitPhase {
  // What ended it: the console line, or the report record's name (its
  // first key up to the dot: "config", "ctx", "kernel"); "" for the last.
  std::string line;
  KernelExitCounts counts;
};

// One exit as KVM's tracepoint reported it (VmConfig::kernel_exit_events,
// RunResult::kernel_exit_events; `minivmm run --kernel-exits --trace`).
struct KernelExitEvent {
  uint64_t time_ns;  // CLOCK_MONOTONIC, the clock of ExitClockNs()
  uint64_t rip;      // the guest RIP at the exit
  uint32_t vcpu;
  uint16_t reason;  // index into RunResult::kernel_exit_reasons
  bool to_vmm;      // KVM_RUN returned to minivmm after it
  // With stacks (RunResult::kernel_exit_stacks): 1 + its stack's index in
  // RunResult::kernel_exit_stack_list; 0 for none.
  uint32_t stack = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_KERNEL_EXITS_H_
