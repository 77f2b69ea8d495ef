// The builtin hypercall handlers, one per entry of MVMM_HYPERCALL_LIST, each
// defined in its own file next to this header and declared here from that
// list. Named exactly as in the ABI's X-macro (not CamelCase) so that the
// declarations and the dispatcher's table are generated from that list: a
// number without a handler is a link error, not a silent gap.
//
// Common contract: arguments are untrusted guest values; each handler
// validates them in the fixed order its file documents and changes no state
// (guest memory, registers, GDT, run control, sinks) before all checks pass,
// except where a batch is documented as partial (mmu_update; mmuext_op is
// all or nothing). The returned
// HypercallResult is what the guest gets in RAX: Done(value) or
// Refuse(MVMM_E..., "static reason"). Handlers never touch ExitStats: the
// dispatcher counts. Called on the vCPU's thread, one exit at a time.
#ifndef MINIVMM_HYPERCALLS_HANDLERS_HANDLERS_H_
#define MINIVMM_HYPERCALLS_HANDLERS_HANDLERS_H_

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "hypercalls/hypercall_result.h"
#include "minivmm/exit_stats.h"
#include "minivmm/hypercall_env.h"
#include "minivmm_abi/hypercall.h"
#include "vmm/core/waste.h"

namespace minivmm::hc {

// Runs one multicall entry as a non-direct operation and returns its result
// (>= 0 or -errno). The dispatcher passes Dispatch(env, nr, args, false).
using OpRunner = absl::FunctionRef<int64_t(uint64_t nr, const HypercallArgs& args)>;

// Each handler's type: the common one, and multicall's, which also runs
// its entries.
template <uint32_t nr>
struct HandlerType {
  using Type = HypercallResult(HypercallEnv& env, const HypercallArgs& args);
};
template <>
struct HandlerType<MVMM_HC_multicall> {
  using Type = HypercallResult(HypercallEnv& env, const HypercallArgs& args, OpRunner run);
};

// The cause MINIVMM_HYPERCALL_CAUSE_LIST (include/minivmm/exit_stats.h)
// gives an operation of hypercall `nr` whose first argument is `command`,
// from the same rows as the counting's CauseOf (dispatcher.cc); Cause::kCount
// for none.
Cause CommandCause(uint64_t nr, uint64_t command);

// A handler's note of one operation it applied, for the wasted-exit
// analysis (vmm/core/waste.h): what it did to the state it owns, under the
// cause its call is counted under (CommandCause of its number and first
// argument), so that a handler never names a cause. Nothing when the run
// has no analysis.
inline void NoteHypercallOp(HypercallEnv& env, uint32_t nr, const HypercallArgs& raw,
                            OpEffect effect) {
  if (env.exit.waste != nullptr) [[unlikely]]
    env.exit.waste->Op(nr, CommandCause(nr, raw[0]), effect);
}
// The same for the CR0 handlers (fpu_taskswitch, write_cr0): a TS set or
// plain clear carries the vCPU's FPU fingerprint (VcpuState::FpuFingerprint),
// read only when the run has the analysis.
inline void NoteCr0Op(HypercallEnv& env, uint32_t nr, const HypercallArgs& raw, OpEffect effect) {
  if (env.exit.waste != nullptr) [[unlikely]] {
    const bool ts = effect == OpEffect::kTsSet || effect == OpEffect::kTsClear ||
                    effect == OpEffect::kTsClearForFpu;
    env.exit.waste->Op(nr, CommandCause(nr, raw[0]), effect,
                       ts ? env.exit.vcpu.FpuFingerprint() : std::nullopt);
  }
}

// One declaration per entry of MVMM_HYPERCALL_LIST: hc::<name>, defined in
// <name>.cc beside this header with exactly its HandlerType.
#define MINIVMM_HC_HANDLER_DECLARATION_(nr, name) HandlerType<nr>::Type name;
MVMM_HYPERCALL_LIST(MINIVMM_HC_HANDLER_DECLARATION_)
#undef MINIVMM_HC_HANDLER_DECLARATION_

}  // namespace minivmm::hc

#endif  // MINIVMM_HYPERCALLS_HANDLERS_HANDLERS_H_
