#include "kernel/hypercall.h"

#include "kernel/boot.h"
#include "kernel/counters.h"
#include "kernel/panic.h"

namespace guest {

HypercallCounts g_hc;

const char* HypercallName(uint64_t nr) {
  switch (nr) {
#define GUEST_HC_NAME_(n, name) \
  case n:                       \
    return #name;
    MVMM_HYPERCALL_LIST(GUEST_HC_NAME_)
#undef GUEST_HC_NAME_
  }
  return "unknown";
}

int64_t Hypercall(uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) {
  // Elsewhere (QEMU/PVH) port 0xEC is nobody's: a hypercall there is a bug.
  if (!g_boot.under_minivmm) Panic("hypercall outside minivmm");
  if (nr < MVMM_HC_MAX) {
    ++g_hc.ops[nr];
    ++g_hc.exits[nr];
  }
  return RawHypercall(nr, a0, a1, a2, a3, a4);
}

namespace {

[[noreturn]] void HypercallFailed(uint64_t nr, int64_t rc, bool in_multicall) {
  char storage[160];
  TextBuf msg(storage, sizeof(storage));
  msg.Str("hypercall ").Str(HypercallName(nr)).Str(" (").Dec(nr).Str(")");
  if (in_multicall) msg.Str(" in a multicall");
  msg.Str(" failed: ").SDec(rc);
  if (rc == -MVMM_ENOSYS) msg.Str(" (ENOSYS: this VMM does not implement it)");
  if (rc == -MVMM_EPERM) msg.Str(" (EPERM)");
  if (rc == -MVMM_EINVAL) msg.Str(" (EINVAL)");
  if (rc == -MVMM_EFAULT) msg.Str(" (EFAULT)");
  Panic(msg.View());
}

}  // namespace

int64_t HypercallOrDie(uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) {
  int64_t rc = Hypercall(nr, a0, a1, a2, a3, a4);
  if (rc < 0) HypercallFailed(nr, rc, false);
  return rc;
}

void FlushBatch(MulticallBatch* batch) {
  if (batch->empty()) return;
  uint32_t n = batch->count();
  ++g_hc.exits[MVMM_HC_multicall];
  ++g_hc.ops[MVMM_HC_multicall];
  ++g_kc.multicalls;
  g_kc.multicall_entries += n;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t op = batch->entries()[i].op;
    if (op < MVMM_HC_MAX) ++g_hc.ops[op];
  }
  int64_t rc = RawHypercall(MVMM_HC_multicall, reinterpret_cast<uintptr_t>(batch->entries()), n);
  if (rc < 0) HypercallFailed(MVMM_HC_multicall, rc, false);
  for (uint32_t i = 0; i < n; ++i) {
    const mvmm_multicall_entry& e = batch->entries()[i];
    if (static_cast<int64_t>(e.result) < 0) HypercallFailed(e.op, static_cast<int64_t>(e.result), true);
  }
  batch->Clear();
}

void AppendHypercallCounts(StrView prefix, const HypercallCounts& c, TextBuf* out) {
#define GUEST_HC_KV_(n, name)                                   \
  out->Str(prefix).Str(".hc." #name "=").Dec(c.ops[n]).Char('\n'); \
  out->Str(prefix).Str(".hc_exits." #name "=").Dec(c.exits[n]).Char('\n');
  MVMM_HYPERCALL_LIST(GUEST_HC_KV_)
#undef GUEST_HC_KV_
}

}  // namespace guest
