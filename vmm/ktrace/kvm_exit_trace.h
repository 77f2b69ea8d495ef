// KVM's kvm:kvm_exit tracepoint, read per vCPU thread through
// perf_event_open and its ring buffer, as perf does, and parsed with
// libtraceevent from the event's own format (found by libtracefs):
// VmConfig::kernel_exits. Beside it, into the same ring so that the records
// stay in the order KVM wrote them: kvm:kvm_userspace_exit (each return of
// KVM_RUN, which tells the exits that reached minivmm from the rest) and
// the tracepoints that detail an exit's work (kvm:kvm_msr, kvm:kvm_cr,
// kvm:kvm_pio, kvm:kvm_hypercall), each credited to the exit before it.
// Nothing of it is on the exit path: the kernel writes the records, and
// Drain() reads them from another thread.
#ifndef MINIVMM_VMM_KTRACE_KVM_EXIT_TRACE_H_
#define MINIVMM_VMM_KTRACE_KVM_EXIT_TRACE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "minivmm/kernel_exits.h"
#include "vmm/ktrace/kvm_exit_stacks.h"
#include "vmm/ktrace/stack_pairing.h"

struct tep_handle;
struct tep_event;
struct tep_format_field;

namespace minivmm {

class KvmExitTrace {
 public:
  // Finds tracefs and kvm:kvm_exit's format and checks that this process
  // may open the tracepoint. FailedPrecondition, one line naming what is
  // missing: no tracefs, no such tracepoint, no right to trace.
  // With `keep_events`, each exit is also kept (Events()). With `stacks`,
  // each exit's frame-pointer stack too (KvmExitStacks), where this host
  // allows it (StacksMissing() says why not).
  static absl::StatusOr<std::unique_ptr<KvmExitTrace>> Open(uint32_t cpus,
                                                            bool keep_events = false,
                                                            bool stacks = false);
  ~KvmExitTrace();
  KvmExitTrace(const KvmExitTrace&) = delete;
  KvmExitTrace& operator=(const KvmExitTrace&) = delete;

  // With stacks: the VMM's mapping of guest RAM, before any vCPU runs.
  void SetRam(std::span<const uint8_t> ram);
  // With stacks asked for: whether they are taken; if not, why not.
  bool stacks() const { return stacks_ != nullptr; }
  const std::string& StacksMissing() const { return stacks_missing_; }

  // On vCPU `cpu`'s own thread, before its first KVM_RUN: that thread's
  // kvm_exit records from now on.
  absl::Status AttachCurrentThread(uint32_t cpu);
  // Reads every record written so far; any thread, one at a time.
  void Drain();
  // Each vCPU's counts, once the run has ended (every vCPU out of
  // KVM_RUN): it reads the last records, and with stacks settles every exit
  // (one whose stack never came counts as unstacked).
  std::vector<KernelExitCounts> Counts();
  // Ends the current phase now (the guest ended console line `line`); any
  // thread.
  void EndPhase(const std::string& line);
  // The phases, in order, the last one unended (after a last Drain()).
  std::vector<KernelExitPhase> Phases();
  // With keep_events, every vCPU's exits in time order (after a last
  // Drain()); their `reason` indexes ReasonNames().
  std::vector<KernelExitEvent> Events();
  std::vector<std::string> ReasonNames();
  // With keep_events and stacks: the stacks Events()' `stack` indexes.
  std::vector<std::vector<uint64_t>> StackList();

 private:
  // The tracepoints read, kvm:kvm_exit first (its fd owns the ring).
  enum class Kind { kExit, kUserspaceExit, kMsr, kCr, kPio, kHypercall };
  struct Source {
    Kind kind;
    tep_event* event;
  };
  struct Ring {
    std::vector<int> fds;  // one per source; fds[0] owns the ring
    uint8_t* base = nullptr;
    KernelExitCounts counts;
    std::vector<KernelExitEvent> events;  // with keep_events_
    // Since the last return of KVM_RUN: its last exit (reason, RIP), and
    // whether a detail was credited to it yet.
    const std::string* last_reason = nullptr;
    uint64_t last_rip = 0;
    bool detailed = false;
    // With stacks: its exits paired with the BPF program's stacks.
    StackPairing pairing;
  };
  KvmExitTrace(tep_handle* tep, std::vector<Source> sources, uint32_t cpus, bool keep_events);
  void DrainRing(Ring& ring);
  // Counts each exit whose stack has come (StackPairing::Settle).
  void Settle(Ring& ring, bool last);
  // Drain() with mu_ held.
  void DrainLocked(bool last);
  void Parse(uint64_t time_ns, const uint8_t* raw, uint32_t size, Ring& ring);
  // f applied to the ring's counts and to those of the phase `time_ns` is in.
  template <typename F>
  void Count(uint64_t time_ns, Ring& ring, F f);
  uint64_t Field(tep_event* event, const char* name, const uint8_t* raw);
  std::string Detail(Kind kind, tep_event* event, const uint8_t* raw);
  // The reason's index in reason_names_.
  uint16_t Reason(const uint8_t* raw, uint32_t size, uint64_t isa, uint64_t code);

  tep_handle* tep_;
  std::vector<Source> sources_;
  std::map<int, size_t> source_of_id_;  // event id -> sources_ index
  std::mutex mu_;
  std::vector<Ring> rings_;
  std::vector<uint8_t> scratch_;  // a record that wraps around the ring's end
  bool keep_events_;
  std::unique_ptr<KvmExitStacks> stacks_;
  std::string stacks_missing_;
  std::map<uint32_t, size_t> ring_of_tid_;
  // With keep_events_: each stack an event has, once (StackList()).
  std::vector<std::vector<uint64_t>> stack_list_;
  std::map<std::vector<uint64_t>, uint32_t> stack_ids_;
  std::map<std::pair<uint64_t, uint64_t>, uint16_t> names_;  // (isa, code) -> reason_names_ index
  std::deque<std::string> reason_names_;  // a deque: Ring::last_reason points into it
  // Phase ends (CLOCK_MONOTONIC ns, the records' clock) and their lines;
  // phase_counts_[i] is phase i's, the one before boundary i.
  std::mutex phase_mu_;
  std::vector<uint64_t> boundaries_;
  std::vector<std::string> lines_;
  std::vector<KernelExitCounts> phase_counts_;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_KTRACE_KVM_EXIT_TRACE_H_
