#include "user/mix_task.h"

#include "user/ulib.h"

namespace guest {
namespace {

using namespace user;

USER_INLINE void Check(bool ok, MixTaskArgs* a) {
  if (!ok) CheckFail(kCheckMix);
  ++a->checks;
}

USER_INLINE uint8_t Token(uint64_t iter, uint64_t id) {
  return static_cast<uint8_t>(iter * 7 + id);
}

}  // namespace

extern "C" USER_TEXT void MixTaskMain(MixTaskArgs* a) {
  UserSseLoad8(a->pattern);
  for (uint64_t i = 0; i < a->iters; ++i) {
    // A system call.
    Check(static_cast<uint64_t>(Syscall(kSysGetPid)) == a->pid, a);
    // A pipe exchange with the partner (both write first: the pipe buffers).
    uint8_t out = Token(i, a->id);
    uint8_t in = 0;
    Write(a->out_fd, &out, 1);
    Check(Read(a->in_fd, &in, 1) == 1 && in == Token(i, a->partner_id), a);
    // A TLS change, read back.
    Check(Syscall(kSysSetTls, 0, a->tls_desc[i % 2]) == 0 && ReadFs0() == a->tls_value[i % 2], a);
    // Give the CPU up.
    Syscall(kSysYield);
    // The private page and the SSE registers survived all of it.
    Check(*reinterpret_cast<const volatile uint64_t*>(a->private_va) == a->private_tag, a);
    UserSseStore8(a->scratch);
    bool same = true;
    for (int b = 0; b < 128; ++b) same = same && a->scratch[b] == a->pattern[b];
    Check(same, a);
    if (MoveDue(i + 1, a->iters, a->migrate, a->cpus)) Check(MoveToNextCpu(a->cpus), a);
  }
  Exit(a->checks);
}

}  // namespace guest
