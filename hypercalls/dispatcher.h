// Hypercalls from the exit to the handler: one file to read. A hypercall is a
// single 4-byte `out` to MVMM_HYPERCALL_PORT; the run loop recognises it and
// calls HandleExit, which reads the number and arguments from the vCPU's
// synced registers, refuses a call from CPL != 0, looks the handler up in a
// table indexed by number (NOVA style, filled from MVMM_HYPERCALL_LIST),
// counts the call and writes the result into RAX. Direct calls and multicall
// entries go through the same Dispatch, so they behave and count alike.
//
// How hypercalls are counted (docs/design.md "What the VMM counts"):
// - hc_exits[nr]: direct calls (one exit each), whatever their result.
// - hc_ops[nr]: direct calls plus multicall entries, attributed to the entry's
//   own number; hc_errors[nr]: those of them that returned < 0.
// - Causes: a call's row in MINIVMM_HYPERCALL_CAUSE_LIST
//   (include/minivmm/exit_stats.h), chosen by its number and first argument,
//   names its cause and what counts as its operations; `exits` counts the
//   direct calls of a row whatever their result (the exit was paid), `ops`
//   the row's operations of the calls that succeeded (none of one that
//   failed). A call without a row has no cause. (lock_wait as a multicall
//   entry is refused, -EINVAL: it may sleep.)
// - directed_yields: accepted sched_op(yield_to) calls.
// - tlb_flushes_deferred: per accepted flush_tlb_others, its targets less
//   the ones it kicked (its result).
// - The multicall histogram counts accepted direct multicalls by entry count.
// - A number outside the table, or unregistered, counts hc_bad_number only; a
//   call from CPL != 0 counts hc_refused_cpl3 only.
//
// Thread-safety: Register must complete before any vCPU runs; after that the
// dispatcher is immutable and HandleExit/Dispatch/Name may run concurrently
// on several vCPU threads, each with its own HypercallEnv and RefusalNotes.
#ifndef MINIVMM_HYPERCALLS_DISPATCHER_H_
#define MINIVMM_HYPERCALLS_DISPATCHER_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hypercalls/handlers/handlers.h"
#include "hypercalls/hypercall_result.h"
#include "minivmm/exit_event.h"
#include "minivmm/exit_stats.h"
#include "minivmm/hypercall_env.h"

namespace minivmm {

// A builtin handler (hypercalls/handlers/handlers.h).
using HypercallFn = HypercallResult (*)(HypercallEnv&, const HypercallArgs&);
// The one builtin that re-enters the dispatcher (multicall).
using MulticallFn = HypercallResult (*)(HypercallEnv&, const HypercallArgs&, hc::OpRunner);
// An embedder's handler (Vm::RegisterHypercall): the value for RAX
// (<= INT64_MAX) or an error status that GuestErrno turns into -errno.
using UserHypercallFn =
    std::function<absl::StatusOr<uint64_t>(HypercallEnv&, const HypercallArgs&)>;

// The first refusal of each kind (hypercall name, reason) as one line for
// the run's notes; later ones cost a comparison per kind seen. Bounded by
// the registered names and the static reasons, whatever the guest calls.
// One per vCPU.
class RefusalNotes {
 public:
  // Hypercall `nr` (named `name`, "" when unregistered) returned `result`
  // for `reason`, a static string.
  void Note(uint64_t nr, std::string_view name, int64_t result, const char* reason);
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  using Kind = std::pair<std::string_view, const char*>;
  std::vector<Kind> seen_;
  std::vector<std::string> lines_;
};

class Dispatcher {
 public:
  // Registers every builtin handler of MVMM_HYPERCALL_LIST under its ABI name.
  Dispatcher();

  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Registers an embedder's hypercall `nr` named `name`. Errors:
  // kOutOfRange when nr is outside [MVMM_HC_USER_FIRST, MVMM_HC_USER_LAST],
  // kInvalidArgument for an empty name or an empty fn, kAlreadyExists when
  // nr is taken. Not thread-safe: call before any vCPU runs.
  absl::Status Register(uint32_t nr, std::string name, UserHypercallFn fn);

  // Handles one hypercall exit of env.exit.vcpu: the number is EAX (the low
  // 32 bits of RAX, as the ABI says), the arguments RDI, RSI, RDX, R10, R8.
  // A call from CPL != 0 is refused with -EPERM before any handler runs
  // (rings 1-2 are unused, so only ring 0 may call). Otherwise runs
  // Dispatch(env, nr, args, /*direct=*/true). Writes the result (>= 0, or
  // -errno) into RAX and returns it. When `event` is set, fills its
  // hypercall, args, result and refusal; when `notes` is set, a refusal is
  // noted there once per kind.
  int64_t HandleExit(HypercallEnv& env, ExitEvent* event = nullptr,
                     RefusalNotes* notes = nullptr) const;

  // Runs one operation: a direct call or a multicall entry (direct = false).
  // No CPL check and no RAX write. Unregistered numbers (including any
  // nr >= MVMM_HC_MAX) get -ENOSYS; a multicall as a non-direct operation
  // gets -EINVAL. Counted as the header comment says.
  HypercallResult Dispatch(HypercallEnv& env, uint64_t nr, const HypercallArgs& args,
                           bool direct) const;

  // The registered name of `nr`, "" when none. The view lives as long as the
  // dispatcher.
  std::string_view Name(uint32_t nr) const;

 private:
  struct Entry {
    std::string name;          // empty: unregistered
    HypercallFn fn = nullptr;  // builtin
    MulticallFn multicall = nullptr;
    UserHypercallFn user;  // embedder
  };
  static Entry MakeBuiltin(const char* name, HypercallFn fn);
  static Entry MakeBuiltin(const char* name, MulticallFn fn);

  HypercallResult DispatchOther(HypercallEnv& env, uint64_t nr, const HypercallArgs& args,
                                bool direct) const;
  // The observer's fields and the refusal note, off the common path.
  void Record(uint64_t nr, const HypercallArgs& args, HypercallResult result, ExitEvent* event,
              RefusalNotes* notes) const;

  std::array<Entry, MVMM_HC_MAX> table_;
};

// The hypercalls that feed each cause are one list,
// MINIVMM_HYPERCALL_CAUSE_LIST in include/minivmm/exit_stats.h, beside the
// causes: CauseOf and kHypercallHasCause read it, and no hypercall is a
// special case of the counting.

// The counting rules above as pure functions over ExitStats, so that they
// are tested on their own.
struct CauseOps {
  Cause cause;
  uint64_t ops;  // operations carried out (0 when the call failed)
};
// The cause a hypercall `nr` with `args` and `result` is counted under, if
// any. Defined for every input.
std::optional<CauseOps> CauseOf(uint64_t nr, const HypercallArgs& args, int64_t result);
// Whether hypercall `nr` has a row in MINIVMM_HYPERCALL_CAUSE_LIST: a call
// of any other number moves no cause's count.
extern const std::array<bool, MVMM_HC_MAX> kHypercallHasCause;
inline bool HypercallHasCause(uint64_t nr) { return nr < MVMM_HC_MAX && kHypercallHasCause[nr]; }
// Histogram bucket for a multicall of `entries` entries: 0 for none, else
// bit_width(entries) capped at kMulticallHistogramBuckets - 1, i.e. buckets
// 0, 1, 2-3, 4-7, ..., 256-511, 512+.
int MulticallHistogramBucket(uint64_t entries);
// Counts one operation of registered hypercall `nr` (< MVMM_HC_MAX) that
// returned `result`; `direct` when it was its own exit rather than a
// multicall entry. No allocation, no lock.
void CountHypercall(ExitStats& stats, uint64_t nr, const HypercallArgs& args, int64_t result,
                    bool direct);

}  // namespace minivmm

#endif  // MINIVMM_HYPERCALLS_DISPATCHER_H_
