#include "kernel/hypercall.h"

#include "kernel/boot.h"
#include "kernel/counters.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"

namespace guest {

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

bool IsAbiHypercall(uint64_t nr) {
  switch (nr) {
#define GUEST_HC_CASE_(n, name) case n:
    MVMM_HYPERCALL_LIST(GUEST_HC_CASE_)
#undef GUEST_HC_CASE_
    return true;
  }
  return false;
}

void CountHypercallOp(HypercallCounts& hc, uint64_t nr, int64_t result, bool direct) {
  if (nr >= MVMM_HC_MAX || (!IsAbiHypercall(nr) && result == -MVMM_ENOSYS)) {
    ++hc.bad_number;
    return;
  }
  ++hc.ops[nr];
  if (direct) ++hc.exits[nr];
  if (result < 0) ++hc.errors[nr];
}

int64_t Hypercall(uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) {
  // Elsewhere (QEMU/PVH) port 0xEC is nobody's: a hypercall there is a bug.
  if (!g_boot.under_minivmm) Panic("hypercall outside minivmm");
  int64_t rc = RawHypercall(nr, a0, a1, a2, a3, a4);
  // Counted after the call (the result decides errors and bad numbers) on
  // the CPU that made it, found once (a hypercall returns on the vCPU that
  // made it); the final report adds its own report and shutdown calls
  // itself.
  if constexpr (kCounters) CountHypercallOp(Hc(), nr & 0xFFFFFFFFu, rc, /*direct=*/true);
  return rc;
}

// The entries' ops as issued: the VMM runs the copy it took at the call, so
// an entry that rewrites a later entry's op in memory must not change what
// is counted (the hostile workload does exactly that).
static uint64_t g_issued_ops[MVMM_MAX_CPUS][MVMM_MULTICALL_MAX_ENTRIES];

int64_t Multicall(uint64_t list_gpa, uint64_t count) {
  if (!g_boot.under_minivmm) Panic("hypercall outside minivmm");
  if constexpr (!kCounters) return RawHypercall(MVMM_HC_multicall, list_gpa, count);
  const uint32_t me = CurrentCpu();
  uint64_t* issued = g_issued_ops[me];
  const auto* e = reinterpret_cast<const volatile mvmm_multicall_entry*>(list_gpa);
  // Only a list the VMM can accept is read: within the count bound and wholly
  // in RAM (a probe's list outside RAM gets -EFAULT and is never touched).
  const uint64_t end = list_gpa + count * sizeof(mvmm_multicall_entry);
  bool countable =
      count <= MVMM_MULTICALL_MAX_ENTRIES && end >= list_gpa && end <= g_boot.memory_size;
  if (countable) {
    for (uint64_t i = 0; i < count; ++i) issued[i] = e[i].op;
  }
  int64_t rc = RawHypercall(MVMM_HC_multicall, list_gpa, count);
  HypercallCounts& hc = g_cpus[me].hc;
  if (rc >= 0 && countable) {
    for (uint64_t i = 0; i < count; ++i)
      CountHypercallOp(hc, issued[i], static_cast<int64_t>(e[i].result), false);
  }
  CountHypercallOp(hc, MVMM_HC_multicall, rc, /*direct=*/true);
  return rc;
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

int64_t HypercallOrDie(uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
                       uint64_t a4) {
  int64_t rc = Hypercall(nr, a0, a1, a2, a3, a4);
  if (rc < 0) HypercallFailed(nr, rc, false);
  return rc;
}

void FlushBatch(MulticallBatch* batch) {
  if (batch->empty()) return;
  uint32_t n = batch->count();
  Count(&KernelCounters::multicalls);
  Count(&KernelCounters::multicall_entries, n);
  int64_t rc = Multicall(reinterpret_cast<uintptr_t>(batch->entries()), n);
  if (rc < 0) HypercallFailed(MVMM_HC_multicall, rc, false);
  for (uint32_t i = 0; i < n; ++i) {
    const mvmm_multicall_entry& e = batch->entries()[i];
    if (static_cast<int64_t>(e.result) < 0)
      HypercallFailed(e.op, static_cast<int64_t>(e.result), true);
  }
  batch->Clear();
}

void AppendHypercallCounts(StrView prefix, const HypercallCounts& c, TextBuf* out) {
#define GUEST_HC_KV_(n, name)                                              \
  out->Str(prefix).Str(".hc." #name "=").Dec(c.ops[n]).Char('\n');         \
  out->Str(prefix).Str(".hc_exits." #name "=").Dec(c.exits[n]).Char('\n'); \
  out->Str(prefix).Str(".hc_errors." #name "=").Dec(c.errors[n]).Char('\n');
  MVMM_HYPERCALL_LIST(GUEST_HC_KV_)
#undef GUEST_HC_KV_
  uint64_t user[3] = {};
  for (uint64_t nr = MVMM_HC_USER_FIRST; nr <= MVMM_HC_USER_LAST; ++nr) {
    user[0] += c.ops[nr];
    user[1] += c.exits[nr];
    user[2] += c.errors[nr];
  }
  out->Str(prefix).Str(".hc.user_range=").Dec(user[0]).Char('\n');
  out->Str(prefix).Str(".hc_exits.user_range=").Dec(user[1]).Char('\n');
  out->Str(prefix).Str(".hc_errors.user_range=").Dec(user[2]).Char('\n');
  out->Str(prefix).Str(".hc_bad_number=").Dec(c.bad_number).Char('\n');
}

}  // namespace guest
