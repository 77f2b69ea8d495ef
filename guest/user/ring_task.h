// The ring-3 task of workload=ctx and workload=pipe (lmbench lat_ctx /
// lat_pipe): pass a one-byte token around a ring of pipes, touch a private
// working set each pass (lat_ctx -s), and self-check TLS, FPU, the private
// pages and the token after every blocking read.
#ifndef GUEST_USER_RING_TASK_H_
#define GUEST_USER_RING_TASK_H_

#include <stdint.h>

namespace guest {

struct RingTaskArgs {
  int64_t in_fd;
  int64_t out_fd;
  uint64_t rounds;
  uint64_t starter;       // 1: writes the token first in each round
  uint64_t fs_expect;     // the value at %fs:0
  uint64_t gs_expect;     // the value at %gs:0
  uint64_t fpu;           // 1: keeps `pattern` in xmm0-7 and checks it
  uint64_t probe_errors;  // 1: first checks that bad system calls fail cleanly
  uint64_t private_va;    // this task's private pages: a tag page, then the working set
  uint64_t private_tag;   // the value the kernel put at private_va (unique per task)
  uint64_t ws_bytes;      // working set after the tag page, touched every pass
  uint64_t cpus;          // CPUs in the machine
  uint64_t migrate;       // every `migrate` rounds, moves to the next CPU (0: never)
  uint64_t checks;        // self-checks passed (also the exit value)
  alignas(16) uint8_t pattern[128];
  alignas(16) uint8_t scratch[128];
};

// Lives in .user_text; entered by iretq with RDI = args (in the user arena).
extern "C" void RingTaskMain(RingTaskArgs* args);

// The ring-3 #NM probe: one SSE register move, then exit(0).
extern "C" void FpuProbeMain(uint64_t unused);

}  // namespace guest

#endif  // GUEST_USER_RING_TASK_H_
