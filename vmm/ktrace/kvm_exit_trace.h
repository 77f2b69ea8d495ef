// KVM's kvm:kvm_exit tracepoint, read per vCPU thread through
// perf_event_open and its ring buffer, as perf does, and parsed with
// libtraceevent from the event's own format (found by libtracefs):
// VmConfig::kernel_exits. Nothing of it is on the exit path: the kernel
// writes the records, and Drain() reads them from another thread.
#ifndef MINIVMM_VMM_KTRACE_KVM_EXIT_TRACE_H_
#define MINIVMM_VMM_KTRACE_KVM_EXIT_TRACE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "minivmm/kernel_exits.h"

struct tep_handle;
struct tep_event;
struct tep_format_field;

namespace minivmm {

class KvmExitTrace {
 public:
  // Finds tracefs and kvm:kvm_exit's format and checks that this process
  // may open the tracepoint. FailedPrecondition, one line naming what is
  // missing: no tracefs, no such tracepoint, no right to trace.
  static absl::StatusOr<std::unique_ptr<KvmExitTrace>> Open(uint32_t cpus);
  ~KvmExitTrace();
  KvmExitTrace(const KvmExitTrace&) = delete;
  KvmExitTrace& operator=(const KvmExitTrace&) = delete;

  // On vCPU `cpu`'s own thread, before its first KVM_RUN: that thread's
  // kvm_exit records from now on.
  absl::Status AttachCurrentThread(uint32_t cpu);
  // Reads every record written so far; any thread, one at a time.
  void Drain();
  // Each vCPU's counts (after a last Drain()).
  std::vector<KernelExitCounts> Counts();
  // Ends the current phase now (the guest ended console line `line`); any
  // thread.
  void EndPhase(const std::string& line);
  // The phases, in order, the last one unended (after a last Drain()).
  std::vector<KernelExitPhase> Phases();

 private:
  struct Ring {
    int fd = -1;
    uint8_t* base = nullptr;
    KernelExitCounts counts;
  };
  KvmExitTrace(tep_handle* tep, tep_event* event, uint32_t cpus);
  void DrainRing(Ring& ring);
  void Parse(uint64_t time_ns, const uint8_t* raw, uint32_t size, KernelExitCounts& counts);
  const std::string& ReasonName(const uint8_t* raw, uint32_t size, uint64_t isa, uint64_t code);

  tep_handle* tep_;
  tep_event* event_;
  tep_format_field* reason_field_;
  tep_format_field* rip_field_;
  tep_format_field* isa_field_;
  std::mutex mu_;
  std::vector<Ring> rings_;
  std::vector<uint8_t> scratch_;  // a record that wraps around the ring's end
  std::map<std::pair<uint64_t, uint64_t>, std::string> names_;  // (isa, code) -> name
  // Phase ends (CLOCK_MONOTONIC ns, the records' clock) and their lines;
  // phase_counts_[i] is phase i's, the one before boundary i.
  std::mutex phase_mu_;
  std::vector<uint64_t> boundaries_;
  std::vector<std::string> lines_;
  std::vector<KernelExitCounts> phase_counts_;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_KTRACE_KVM_EXIT_TRACE_H_
