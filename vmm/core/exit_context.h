// What a device or a hypercall handler may touch while it handles one exit of
// one vCPU: that vCPU's registers, its run control and its counters.
#ifndef MINIVMM_VMM_CORE_EXIT_CONTEXT_H_
#define MINIVMM_VMM_CORE_EXIT_CONTEXT_H_

#include "vmm/core/exit_stats.h"
#include "vmm/core/run_control.h"
#include "vmm/core/vcpu_state.h"

namespace minivmm {

struct ExitContext {
  VcpuState& vcpu;
  RunControl& control;
  ExitStats& stats;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_CORE_EXIT_CONTEXT_H_
