// The hypercall dispatcher: a table indexed by hypercall number (NOVA style),
// filled from MVMM_HYPERCALL_LIST with the builtin handlers, plus extra
// handlers an embedder registers in the user range. Direct calls and
// multicall entries go through the same Dispatch, so they behave identically.
//
// The run loop's one call per hypercall exit is HandleExit(env):
//
//   case IoOut with port MVMM_HYPERCALL_PORT:
//     dispatcher.HandleExit(env);   // reads RAX/args, writes RAX, counts
//     then act on env.exit.control.request (yield/block/shutdown).
//
// Thread-safety: Register must complete before any vCPU runs; after that
// HandleExit/Dispatch/Name are const and may run concurrently on several
// vCPU threads, each with its own HypercallEnv (the handlers' state lives in
// the env, not in the dispatcher).
#ifndef MINIVMM_HYPERCALLS_DISPATCHER_H_
#define MINIVMM_HYPERCALLS_DISPATCHER_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hypercalls/guest_errno.h"
#include "hypercalls/handlers/handlers.h"
#include "hypercalls/hypercall_env.h"

namespace minivmm {

// A builtin handler: returns the value for RAX (>= 0, <= INT64_MAX) or an
// error status that GuestErrno turns into -errno.
using HypercallFn = absl::StatusOr<uint64_t> (*)(HypercallEnv&, const HypercallArgs&);
// The one builtin that re-enters the dispatcher (multicall).
using MulticallFn = absl::StatusOr<uint64_t> (*)(HypercallEnv&, const HypercallArgs&, hc::OpRunner);
// An embedder's handler; same contract as HypercallFn.
using UserHypercallFn =
    std::function<absl::StatusOr<uint64_t>(HypercallEnv&, const HypercallArgs&)>;

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
  // A call from CPL != 0 is refused with -EPERM before any handler runs (and
  // counted in hc_refused_cpl3; rings 1-2 are unused, so only ring 0 may
  // call). Otherwise runs Dispatch(env, nr, args, /*direct=*/true). Writes
  // the result (>= 0, or -errno) into RAX through VcpuState and returns it.
  int64_t HandleExit(HypercallEnv& env) const;

  // Runs one operation: a direct call or a multicall entry (direct = false).
  // No CPL check and no RAX write. Unregistered numbers (including any
  // nr >= MVMM_HC_MAX) get -ENOSYS and count hc_bad_number only; a multicall
  // as a non-direct operation gets -EINVAL. Everything else is counted by
  // CountHypercall (accounting.h). Returns >= 0 or -errno.
  int64_t Dispatch(HypercallEnv& env, uint64_t nr, const HypercallArgs& args, bool direct) const;

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

  absl::StatusOr<uint64_t> Run(const Entry& entry, HypercallEnv& env,
                               const HypercallArgs& args) const;

  std::array<Entry, MVMM_HC_MAX> table_;
};

}  // namespace minivmm

#endif  // MINIVMM_HYPERCALLS_DISPATCHER_H_
