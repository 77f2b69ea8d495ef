// The builtin hypercall handlers, one per entry of MVMM_HYPERCALL_LIST, each
// defined in its own file next to this header. Named exactly as in the ABI's
// X-macro (not CamelCase) so that the dispatcher's table is generated from
// that list: a number without a handler is a compile error, not a silent gap.
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
#include "hypercalls/waste.h"
#include "minivmm/hypercall_env.h"

namespace minivmm::hc {

// Runs one multicall entry as a non-direct operation and returns its result
// (>= 0 or -errno). The dispatcher passes Dispatch(env, nr, args, false).
using OpRunner = absl::FunctionRef<int64_t(uint64_t nr, const HypercallArgs& args)>;

HypercallResult mmu_update(HypercallEnv& env, const HypercallArgs& args);
HypercallResult stack_switch(HypercallEnv& env, const HypercallArgs& args);
HypercallResult fpu_taskswitch(HypercallEnv& env, const HypercallArgs& args);
HypercallResult update_descriptor(HypercallEnv& env, const HypercallArgs& args);
HypercallResult multicall(HypercallEnv& env, const HypercallArgs& args, OpRunner run);
HypercallResult set_timer_op(HypercallEnv& env, const HypercallArgs& args);
HypercallResult force_evtchn_callback(HypercallEnv& env, const HypercallArgs& args);
HypercallResult console_io(HypercallEnv& env, const HypercallArgs& args);
HypercallResult mmuext_op(HypercallEnv& env, const HypercallArgs& args);
HypercallResult vcpu_op(HypercallEnv& env, const HypercallArgs& args);
HypercallResult set_segment_base(HypercallEnv& env, const HypercallArgs& args);
HypercallResult sched_op(HypercallEnv& env, const HypercallArgs& args);
HypercallResult set_if(HypercallEnv& env, const HypercallArgs& args);
HypercallResult write_cr0(HypercallEnv& env, const HypercallArgs& args);
HypercallResult report(HypercallEnv& env, const HypercallArgs& args);
HypercallResult send_ipi(HypercallEnv& env, const HypercallArgs& args);
HypercallResult flush_tlb_others(HypercallEnv& env, const HypercallArgs& args);
HypercallResult lock_wait(HypercallEnv& env, const HypercallArgs& args);
HypercallResult lock_kick(HypercallEnv& env, const HypercallArgs& args);

}  // namespace minivmm::hc

#endif  // MINIVMM_HYPERCALLS_HANDLERS_HANDLERS_H_
