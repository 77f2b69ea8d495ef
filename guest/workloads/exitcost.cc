// workload=exitcost: the guest-side cost of one exit. `loops` null
// hypercalls (console_io of 0 bytes: the VMM checks the arguments and
// returns), timed with the TSC; net of an empty loop of the same length.
// `minivmm bench` runs it to turn the exits a seed saves into time
// (docs/RESULTS.md "Exit-cost model"). Each call is one exit: the VMM's
// console_io exits for the workload equal `exitcost.calls`.
#include "arch/cpu.h"
#include "kernel/hypercall.h"
#include "kernel/panic.h"
#include "workloads/workload.h"

namespace guest {

void RunExitCost(const WorkloadArgs& args) {
  const uint64_t loops = args.Get("loops");
  uint64_t checks = 0;
  WorkloadRecord rec("exitcost");
  const uint64_t t0 = cpu::Rdtsc();
  for (uint64_t i = 0; i < loops; ++i) {
    // Self-check: a zero-byte write succeeds and writes nothing.
    if (Hypercall(MVMM_HC_console_io, MVMM_CONSOLEIO_WRITE, 0, 0) != 0)
      Fatal(kExitCheckFailed, "exitcost: console_io of 0 bytes did not return 0");
    ++checks;
  }
  const uint64_t elapsed = cpu::Rdtsc() - t0;
  rec.Put("calls", loops);
  rec.PutTiming(loops, elapsed, EmptyLoopTsc(loops));
  rec.Finish(checks);
}

}  // namespace guest
