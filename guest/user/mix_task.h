// The ring-3 task of workload=aim (an AIM7-like job mix): each iteration
// runs a few short jobs, each self-checked: a system call, a pipe exchange
// with a partner task, a TLS change read back through %fs, SSE registers
// kept across everything, the task's private page, a yield and, every
// `migrate` iterations, a move to the next CPU.
#ifndef GUEST_USER_MIX_TASK_H_
#define GUEST_USER_MIX_TASK_H_

#include <stdint.h>

namespace guest {

struct MixTaskArgs {
  uint64_t pid;
  uint64_t id;          // the task's index; its partner's is partner_id
  uint64_t partner_id;  // the task it exchanges a byte with each iteration
  int64_t in_fd;        // reads the partner's byte
  int64_t out_fd;       // writes to the partner's pipe
  uint64_t iters;
  uint64_t cpus;
  uint64_t migrate;       // every `migrate` iterations, moves to the next CPU (0: never)
  uint64_t tls_desc[2];   // descriptors set_tls alternates between for slot 0
  uint64_t tls_value[2];  // what %fs:0 then reads
  uint64_t private_va;    // a page only this task's address space maps
  uint64_t private_tag;   // what it holds
  uint64_t checks;        // self-checks passed (also the exit value)
  alignas(16) uint8_t pattern[128];
  alignas(16) uint8_t scratch[128];
};

// Lives in .user_text; entered by iretq with RDI = args (in the user arena).
extern "C" void MixTaskMain(MixTaskArgs* args);

}  // namespace guest

#endif  // GUEST_USER_MIX_TASK_H_
