// What a device or a hypercall handler may touch while it handles one exit of
// one vCPU: that vCPU's registers, its run control and its counters.
#ifndef MINIVMM_EXIT_CONTEXT_H_
#define MINIVMM_EXIT_CONTEXT_H_

#include "minivmm/exit_stats.h"
#include "minivmm/run_control.h"
#include "minivmm/vcpu_state.h"

namespace minivmm {

class WasteLog;

struct ExitContext {
  VcpuState& vcpu;
  RunControl& control;
  ExitStats& stats;
  // The wasted-exit analysis, when the run asked for it; handlers and
  // devices describe each operation they apply to it (vmm/core/waste.h).
  WasteLog* waste = nullptr;
  // The exiting vCPU's number (0 = the boot CPU), as its RSI at entry said.
  uint32_t vcpu_id = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_EXIT_CONTEXT_H_
