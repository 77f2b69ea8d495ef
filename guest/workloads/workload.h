// Workloads (workload=<name>) and the record each one reports.
#ifndef GUEST_WORKLOADS_WORKLOAD_H_
#define GUEST_WORKLOADS_WORKLOAD_H_

#include <stdint.h>

#include "kernel/counters.h"
#include "kernel/hypercall.h"
#include "lib/cmdline.h"

namespace guest {

// Runs the configured workload; returns when it finished (it exits
// through Fatal/Shutdown itself on a failed check or a fault).
void RunWorkload(const Config& config);

// Counter snapshot taken when a workload starts; Finish() appends the
// deltas as <name>.<counter> and the hypercall deltas (the uncounted kernel
// has none: kernel/percpu.h), plus the TSC time.
class WorkloadRecord {
 public:
  explicit WorkloadRecord(const char* name);
  // Appends "<name>.<key>=<value>" to the pending record.
  void Put(StrView key, uint64_t value);
  // Time per operation: raw, the empty-loop baseline, and raw - baseline.
  void PutTiming(uint64_t ops, uint64_t tsc_total, uint64_t baseline_total);
  // Appends the counter deltas (none in the uncounted kernel) and
  // self-check results and sends the record.
  void Finish(uint64_t checks_passed, uint64_t checks_failed = 0);

 private:
  void AppendCountsSince(TextBuf& r);

  const char* name_;
  KernelCounters kc_before_;
  HypercallCounts hc_before_;
};

// TSC cycles spent by an empty loop of `iterations`: the baseline that
// timings subtract (measured in the same run, since emulation speed varies).
uint64_t EmptyLoopTsc(uint64_t iterations);

// Total self-checks passed over all workloads (kernel record: check.passed).
extern uint64_t g_checks_passed;

// The runners lib/workload_list.h names, one per workload.
void RunNone(const WorkloadArgs& args);
void RunAll(const WorkloadArgs& args);
void RunHello(const WorkloadArgs& args);
void RunFault(const WorkloadArgs& args);
void RunCtx(const WorkloadArgs& args);
void RunPipe(const WorkloadArgs& args);
// ctx and pipe: a ring of `tasks` tasks (ring.cc), reported under `name`.
void RunRing(const char* name, uint64_t tasks, const WorkloadArgs& args);
void RunIrq(const WorkloadArgs& args);
void RunCpa(const WorkloadArgs& args);
void RunFpu(const WorkloadArgs& args);
void RunCustom(const WorkloadArgs& args);
void RunHcall(const WorkloadArgs& args);
void RunHostile(const WorkloadArgs& args);
void RunHostProbe(const WorkloadArgs& args);
void RunExitCost(const WorkloadArgs& args);
void RunShootdown(const WorkloadArgs& args);
void RunLock(const WorkloadArgs& args);
void RunAim(const WorkloadArgs& args);

}  // namespace guest

#endif  // GUEST_WORKLOADS_WORKLOAD_H_
