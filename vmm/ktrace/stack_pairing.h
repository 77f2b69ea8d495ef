// One vCPU thread's exits, as read from KVM's tracepoint ring, paired with
// the stacks the BPF program wrote for them (kvm_exit_stack.bpf.c), each in
// the order the thread's exits happened (docs/design.md "In-kernel exits").
// Pure: no KVM, no BPF, so it is unit-tested on its own.
//
// Both sides see every exit, in one tracepoint call, so the n-th stack is
// the n-th exit's; a stack the BPF ring had no room for is missing, never
// added, which a stack whose RIP is not the exit's shows: that exit goes
// unstacked and the stack waits for the next exit, whose it is.
#ifndef MINIVMM_VMM_KTRACE_STACK_PAIRING_H_
#define MINIVMM_VMM_KTRACE_STACK_PAIRING_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

namespace minivmm {

class StackPairing {
 public:
  struct Exit {
    uint64_t time_ns;
    const std::string* reason;
    uint64_t rip;
    bool to_vmm = false;  // KVM_RUN returned to minivmm after it
    size_t event = 0;     // its index among the kept events, if kept
  };

  // An exit read from the tracepoint's ring.
  void AddExit(const Exit& exit) { exits_.push_back(exit); }
  // KVM_RUN returned to minivmm after the last exit added.
  void LastReachedVmm() {
    if (!exits_.empty()) exits_.back().to_vmm = true;
  }
  // A stack read from the BPF program's ring (frames[0] the RIP).
  void AddStack(std::vector<uint64_t> stack) { stacks_.push_back(std::move(stack)); }

  // Hands over each exit whose stack has come, paired(exit, stack), and each
  // that has none, unstacked(exit), in order. An exit waits while it is the
  // last one read (a later record may say it reached minivmm) and while its
  // stack may still come; with `last` (the run has ended: every record is
  // written), none waits.
  template <typename Paired, typename Unstacked>
  void Settle(bool last, Paired paired, Unstacked unstacked) {
    while (!exits_.empty() && (last || exits_.size() > 1)) {
      if (stacks_.empty() && !last) break;
      const Exit exit = exits_.front();
      exits_.pop_front();
      if (stacks_.empty() || stacks_.front().empty() || stacks_.front()[0] != exit.rip) {
        unstacked(exit);
        continue;
      }
      paired(exit, std::move(stacks_.front()));
      stacks_.pop_front();
    }
  }

 private:
  std::deque<Exit> exits_;
  std::deque<std::vector<uint64_t>> stacks_;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_KTRACE_STACK_PAIRING_H_
