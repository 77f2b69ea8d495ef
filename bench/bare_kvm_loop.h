// The reference for the VMM's own overhead: the smallest KVM_RUN loop that
// runs the same guest image with the same boot layout and answers its
// hypercalls with 0 through the synced registers, and nothing else (no
// accounting, no dispatch, no devices). It is the floor minivmm is measured
// against, so it deliberately includes <linux/kvm.h> itself.
#ifndef MINIVMM_BENCH_BARE_KVM_LOOP_H_
#define MINIVMM_BENCH_BARE_KVM_LOOP_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace minivmm::bench {

struct BareRun {
  uint64_t exits = 0;  // hypercall exits, the final shutdown included
  double seconds = 0;  // from the first KVM_RUN to the shutdown exit
};

// Boots `kernel` (like Vm::Create, 64 MiB) and runs it until it calls
// sched_op(shutdown). Errors for anything else it meets.
absl::StatusOr<BareRun> RunBareLoop(const std::string& kernel);

}  // namespace minivmm::bench

#endif  // MINIVMM_BENCH_BARE_KVM_LOOP_H_
