// What a device or a hypercall handler may touch while it handles one exit of
// one vCPU: that vCPU's registers, its run control and its counters.
#ifndef MINIVMM_EXIT_CONTEXT_H_
#define MINIVMM_EXIT_CONTEXT_H_

#include "minivmm/exit_stats.h"
#include "minivmm/run_control.h"
#include "minivmm/vcpu_state.h"

namespace minivmm {

struct ExitContext {
  VcpuState& vcpu;
  RunControl& control;
  ExitStats& stats;
};

}  // namespace minivmm

#endif  // MINIVMM_EXIT_CONTEXT_H_
