// The guest's frame-pointer stack at each exit KVM makes, taken by a BPF
// program on the kvm_exit tracepoint (kvm_exit_stack.bpf.c): for
// --kernel-exits --sites (VmConfig::kernel_exits with record_sites), so
// that an in-kernel exit's site is its call chain, as a userspace exit's
// is. kvm_amd only: the program reads the guest's RIP, CPL and CS from the
// VMCB, which on kvm_intel is the VMCS, out of a BPF program's reach.
#ifndef MINIVMM_VMM_KTRACE_KVM_EXIT_STACKS_H_
#define MINIVMM_VMM_KTRACE_KVM_EXIT_STACKS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/ktrace/kvm_exit_stack.h"

struct kvm_exit_stack;
struct ring_buffer;

namespace minivmm {

class KvmExitStacks {
 public:
  // Loads the program and attaches it. FailedPrecondition, one line saying
  // why the stacks cannot be had on this host (kvm_intel, no BTF for KVM's
  // modules, no right to load BPF programs, ...).
  static absl::StatusOr<std::unique_ptr<KvmExitStacks>> Open();
  ~KvmExitStacks();
  KvmExitStacks(const KvmExitStacks&) = delete;
  KvmExitStacks& operator=(const KvmExitStacks&) = delete;

  // The VMM's mapping of guest RAM, guest-physical 0 up: where the walk
  // reads frames. Before any vCPU runs.
  void SetRam(std::span<const uint8_t> ram);
  // Watches thread `tid` (a vCPU's, before its first KVM_RUN).
  absl::Status AddThread(pid_t tid);
  // Hands every stack written so far to `take`, in the order each thread's
  // exits happened.
  void Consume(const std::function<void(const minivmm_exit_stack&)>& take);

 private:
  explicit KvmExitStacks(kvm_exit_stack* skeleton) : skeleton_(skeleton) {}
  kvm_exit_stack* skeleton_;
  ring_buffer* ring_ = nullptr;
  const std::function<void(const minivmm_exit_stack&)>* take_ = nullptr;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_KTRACE_KVM_EXIT_STACKS_H_
