// workload=exitcost: the guest-side cost of one exit, in two loops of
// `loops` null hypercalls each (console_io of 0 bytes: the VMM checks the
// arguments and returns), timed with the TSC, each net of an empty loop of
// the same length:
// - bare: one `out` and a test of its result, nothing else: what an exit
//   costs the guest (Linux's hypercall path has no counting either).
//   `minivmm bench` turns exits into time with it (docs/RESULTS.md
//   "Exit-cost model"). Its calls are counted in the guest's hypercall
//   counts after the loop, outside the timed region.
// - wrapper: the same call through the counted Hypercall() wrapper, as
//   every pv op issues it: the exit plus the kernel's own bookkeeping
//   (per-number counts). `wrapper_tsc_net_per_op` - `tsc_net_per_op` is what
//   that bookkeeping costs per hypercall on this host.
// Each call is one exit: the VMM's console_io exits for the workload equal
// `exitcost.calls` (= 2 x loops).
#include "arch/cpu.h"
#include "kernel/hypercall.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"
#include "workloads/workload.h"

namespace guest {

void RunExitCost(const WorkloadArgs& args) {
  const uint64_t loops = args.Get("loops");
  WorkloadRecord rec("exitcost");

  uint64_t bare_failed = 0;
  const uint64_t t0 = cpu::Rdtsc();
  for (uint64_t i = 0; i < loops; ++i)
    bare_failed += RawHypercall(MVMM_HC_console_io, MVMM_CONSOLEIO_WRITE, 0, 0) != 0;
  const uint64_t bare = cpu::Rdtsc() - t0;
  const uint64_t bare_empty = EmptyLoopTsc(loops);
  // The bare calls' accounting, as Hypercall() would have done it per call.
  HypercallCounts& hc = Hc();
  hc.ops[MVMM_HC_console_io] += loops;
  hc.exits[MVMM_HC_console_io] += loops;
  hc.errors[MVMM_HC_console_io] += bare_failed;
  if (bare_failed != 0) Fatal(kExitCheckFailed, "exitcost: console_io of 0 bytes did not return 0");

  uint64_t wrapper_failed = 0;
  const uint64_t t1 = cpu::Rdtsc();
  for (uint64_t i = 0; i < loops; ++i)
    wrapper_failed += Hypercall(MVMM_HC_console_io, MVMM_CONSOLEIO_WRITE, 0, 0) != 0;
  const uint64_t wrapper = cpu::Rdtsc() - t1;
  const uint64_t wrapper_empty = EmptyLoopTsc(loops);
  if (wrapper_failed != 0)
    Fatal(kExitCheckFailed, "exitcost: console_io of 0 bytes did not return 0");

  rec.Put("calls", 2 * loops);
  rec.PutTiming(loops, bare, bare_empty);
  rec.Put("wrapper_tsc_per_op", wrapper / (loops ? loops : 1));
  rec.Put("wrapper_tsc_net_per_op",
          wrapper > wrapper_empty ? (wrapper - wrapper_empty) / (loops ? loops : 1) : 0);
  // Self-checks: each call of each loop returned 0.
  rec.Finish(2 * loops);
}

}  // namespace guest
