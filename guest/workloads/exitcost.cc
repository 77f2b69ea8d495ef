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
namespace {

struct TimedLoop {
  uint64_t tsc;     // the loop's TSC cycles
  uint64_t empty;   // an empty loop's of the same length, measured right after
  uint64_t failed;  // calls that did not return 0
};

// `loops` null hypercalls (console_io of 0 bytes) made by `call`, timed.
template <typename Call>
TimedLoop TimeNullCalls(uint64_t loops, Call call) {
  TimedLoop t = {0, 0, 0};
  const uint64_t t0 = cpu::Rdtsc();
  for (uint64_t i = 0; i < loops; ++i)
    t.failed += call(MVMM_HC_console_io, MVMM_CONSOLEIO_WRITE, 0, 0) != 0;
  t.tsc = cpu::Rdtsc() - t0;
  t.empty = EmptyLoopTsc(loops);
  return t;
}

void CheckNullCalls(const TimedLoop& t) {
  if (t.failed != 0) Fatal(kExitCheckFailed, "exitcost: console_io of 0 bytes did not return 0");
}

}  // namespace

void RunExitCost(const WorkloadArgs& args) {
  const uint64_t loops = args.Get("loops");
  WorkloadRecord rec("exitcost");

  const TimedLoop bare =
      TimeNullCalls(loops, [](uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2) {
        return RawHypercall(nr, a0, a1, a2);
      });
  // The bare calls' accounting, as Hypercall() would have done it per call.
  HypercallCounts& hc = Hc();
  hc.ops[MVMM_HC_console_io] += loops;
  hc.exits[MVMM_HC_console_io] += loops;
  hc.errors[MVMM_HC_console_io] += bare.failed;
  CheckNullCalls(bare);

  const TimedLoop wrapped = TimeNullCalls(
      loops,
      [](uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2) { return Hypercall(nr, a0, a1, a2); });
  CheckNullCalls(wrapped);

  const uint64_t ops = loops ? loops : 1;
  rec.Put("calls", 2 * loops);
  rec.PutTiming(loops, bare.tsc, bare.empty);
  rec.Put("wrapper_tsc_per_op", wrapped.tsc / ops);
  rec.Put("wrapper_tsc_net_per_op",
          wrapped.tsc > wrapped.empty ? (wrapped.tsc - wrapped.empty) / ops : 0);
  // Self-checks: each call of each loop returned 0.
  rec.Finish(2 * loops);
}

}  // namespace guest
