// multicall(list_gpa, count): run `count` entries `{op, result, args[6]}` as
// if each were its own hypercall, in one exit.
// Order: count <= MVMM_MULTICALL_MAX_ENTRIES (-E2BIG; this bound also makes
// count * 64 unable to wrap), count == 0 is a no-op returning 0 (the list is
// not looked at), the whole list inside RAM (-EFAULT). The list is copied
// once into a host buffer before any entry runs: an entry that rewrites later
// entries in guest memory does not change what runs (the copy is what runs).
// Entries run in order through the dispatcher (args[0..4]; args[5] is
// ignored), and after each one only its `result` field (offset 8) is written
// back to guest memory; nothing else of the list is written.
// A failing entry does NOT stop the batch (Xen's semantics): every entry runs
// and reports its own result; the multicall itself returns 0 once the list
// was accepted. A multicall issued as an entry gets -EINVAL (enforced by the
// dispatcher for every non-direct multicall), and so does lock_wait (it may
// sleep and writes its outcome into RAX after its own exit).
#include <array>
#include <cstddef>
#include <span>

#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"

namespace minivmm::hc {

HypercallResult multicall(HypercallEnv& env, const HypercallArgs& raw, OpRunner run) {
  const auto args = ReadArgs<MVMM_HC_multicall>(raw);
  if (args.count > MVMM_MULTICALL_MAX_ENTRIES) {
    return Refuse(MVMM_E2BIG, "count above MVMM_MULTICALL_MAX_ENTRIES");
  }
  if (args.count == 0) return Done(0);
  // 32 KiB on the vCPU thread's stack: bounded, and no allocation per call.
  std::array<mvmm_multicall_entry, MVMM_MULTICALL_MAX_ENTRIES> buffer;
  const std::span<mvmm_multicall_entry> entries(buffer.data(), args.count);
  if (!env.memory.Read(args.list, entries)) return Refuse(MVMM_EFAULT, "entry list outside RAM");

  for (uint64_t i = 0; i < entries.size(); ++i) {
    const mvmm_multicall_entry& entry = entries[i];
    HypercallArgs entry_args;
    for (size_t k = 0; k < entry_args.size(); ++k) entry_args[k] = entry.args[k];
    WasteLog* const waste = env.exit.waste;
    if (waste != nullptr) waste->BeginEntry();
    const int64_t result = run(entry.op, entry_args);
    if (waste != nullptr) waste->EndEntry(result >= 0);
    const GuestAddress result_field =
        args.list + i * sizeof(mvmm_multicall_entry) + offsetof(mvmm_multicall_entry, result);
    // Cannot fail: the whole list was inside RAM a moment ago and RAM does not
    // shrink. If it ever does, stop rather than run entries we cannot report.
    if (!env.memory.WriteObj<uint64_t>(result_field, static_cast<uint64_t>(result))) {
      return Refuse(MVMM_EFAULT, "result field outside RAM");
    }
  }
  return Done(0);
}

}  // namespace minivmm::hc
