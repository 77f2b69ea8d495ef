// The one list of the guest's workloads (workload=<name>): its parameters,
// the function that runs it, and what the CLI's bench tables count it by.
// The parser (lib/cmdline.cc), the dispatcher (workloads/workload.cc),
// workload=all, the CLI's bench metrics, default bench items and compare
// tables derive from it. Freestanding (also compiled on the host). Adding a
// workload: docs/extending.md.
//
// X(name, runner, params, flags, op, op_counter, time_op, bench)
//   name        its spelling in workload=<name> and its report prefix
//   runner      guest::<runner>(const WorkloadArgs&) runs it (the guest only)
//   params      its ParamSpec array below, or kNoParams
//   flags       kWorkloadInAll: workload=all runs it (with its defaults, in
//               list order); kWorkloadNeedsMinivmm: it talks to minivmm's
//               hypercalls, so it refuses to run where port 0xEC is nobody's;
//               kWorkloadNeedsCounters: it checks its hypercalls against the
//               kernel's counts, so the uncounted kernel refuses it
//   op          what one operation is in the bench tables ("pass": exits
//               and time per pass)
//   op_counter  the report key (after "<name>.") counting them; "" for
//               none (the bench then counts tsc_total / tsc_per_op)
//   time_op     what <name>.tsc_net_per_op is per (cpa: a pte_flags call)
//   bench       the items `minivmm bench` runs by default ("" for none)
#ifndef GUEST_LIB_WORKLOAD_LIST_H_
#define GUEST_LIB_WORKLOAD_LIST_H_

#include "lib/cmdline.h"

namespace guest {

inline constexpr uint64_t kBig = 1000000;
// lat_ctx -s: KiB each ring task touches per pass (a multiple of 4 KiB is
// not required; whole pages are mapped).
inline constexpr uint64_t kMaxWorkingSetKib = 1024;

inline constexpr ParamSpec kHelloParams[] = {{"lines", nullptr, 3, 0, 10000}};
inline constexpr ParamSpec kFaultParams[] = {{"kind", "ud|gp|pf|de|int3|gdt", 0, 0, 0}};
inline constexpr ParamSpec kCtxParams[] = {
    {"tasks", nullptr, 3, 2, 16},      {"rounds", nullptr, 20, 1, kBig},
    {"tls", "same|one|all", 2, 0, 0},  {"fs", "desc|base", 0, 0, 0},
    {"fpu", "none|all", 1, 0, 0},      {"preempt", nullptr, 0, 0, 1},
    {"mm", "process|thread", 0, 0, 0}, {"ws", nullptr, 0, 0, kMaxWorkingSetKib},
    {"spread", nullptr, 0, 0, 1},      {"migrate", nullptr, 0, 0, kBig}};
inline constexpr ParamSpec kPipeParams[] = {{"rounds", nullptr, 20, 1, kBig},
                                            {"tls", "same|one|all", 2, 0, 0},
                                            {"fs", "desc|base", 0, 0, 0},
                                            {"fpu", "none|all", 1, 0, 0},
                                            {"preempt", nullptr, 0, 0, 1},
                                            {"mm", "process|thread", 0, 0, 0},
                                            {"ws", nullptr, 0, 0, kMaxWorkingSetKib},
                                            {"spread", nullptr, 0, 0, 1},
                                            {"migrate", nullptr, 0, 0, kBig}};
inline constexpr ParamSpec kIrqParams[] = {
    {"loops", nullptr, 50, 1, kBig}, {"depth", nullptr, 2, 1, 8}, {"pending", nullptr, 0, 0, 1}};
inline constexpr ParamSpec kCpaParams[] = {{"pages", nullptr, 16, 1, 512},
                                           {"rounds", nullptr, 1, 1, kBig},
                                           {"calls", nullptr, 4, 1, kBig}};
inline constexpr ParamSpec kFpuParams[] = {{"threads", nullptr, 2, 2, 8},
                                           {"rounds", nullptr, 20, 1, kBig}};
inline constexpr ParamSpec kExitCostParams[] = {{"loops", nullptr, 2000, 1, 1000000}};
inline constexpr ParamSpec kCustomParams[] = {{"n", nullptr, 3, 0, 255}};
inline constexpr ParamSpec kHostileParams[] = {{"floods", nullptr, 2, 0, 64}};
inline constexpr ParamSpec kHostProbeParams[] = {{"loops", nullptr, 10000, 1, kBig},
                                                 {"vmcall", nullptr, 1, 0, 1}};
inline constexpr ParamSpec kShootdownParams[] = {{"rounds", nullptr, 20, 1, kBig}};
inline constexpr ParamSpec kLockParams[] = {{"iters", nullptr, 200, 1, kBig},
                                            {"cs", nullptr, 20, 0, kBig}};
inline constexpr ParamSpec kAimParams[] = {{"tasks", nullptr, 4, 1, 16},
                                           {"iters", nullptr, 10, 1, kBig},
                                           {"migrate", nullptr, 0, 0, kBig}};

#define GUEST_WORKLOAD_LIST(X)                                                                    \
  X("none", RunNone, kNoParams, 0, "op", "", "op", "")                                            \
  X("hello", RunHello, kHelloParams, 0, "line", "lines", "line", "")                              \
  X("fault", RunFault, kFaultParams, 0, "op", "", "op", "")                                       \
  X("ctx", RunCtx, kCtxParams, kWorkloadInAll, "pass", "passes", "pass", "ctx,ctx:tls=same")      \
  X("pipe", RunPipe, kPipeParams, kWorkloadInAll, "pass", "passes", "pass", "pipe,pipe:tls=same") \
  X("irq", RunIrq, kIrqParams, kWorkloadInAll, "restore", "restores", "restore", "irq")           \
  X("cpa", RunCpa, kCpaParams, kWorkloadInAll, "PTE changed", "ptes_changed", "pte_flags call",   \
    "cpa")                                                                                        \
  X("fpu", RunFpu, kFpuParams, kWorkloadInAll, "yield", "yields", "yield", "fpu")                 \
  X("all", RunAll, kNoParams, 0, "op", "", "op", "")                                              \
  X("custom", RunCustom, kCustomParams, kWorkloadNeedsMinivmm, "op", "", "op", "")                \
  X("hcall", RunHcall, kNoParams, kWorkloadNeedsMinivmm | kWorkloadNeedsCounters, "op", "", "op", \
    "")                                                                                           \
  X("hostile", RunHostile, kHostileParams, kWorkloadNeedsMinivmm | kWorkloadNeedsCounters, "op",  \
    "", "op", "")                                                                                 \
  X("hostprobe", RunHostProbe, kHostProbeParams, kWorkloadNeedsMinivmm, "op", "", "op", "")       \
  X("exitcost", RunExitCost, kExitCostParams, kWorkloadNeedsMinivmm, "op", "", "op", "")          \
  X("shootdown", RunShootdown, kShootdownParams, 0, "op", "", "op", "")                           \
  X("lock", RunLock, kLockParams, 0, "op", "", "op", "")                                          \
  X("aim", RunAim, kAimParams, 0, "job", "jobs", "job", "")

}  // namespace guest

#endif  // GUEST_LIB_WORKLOAD_LIST_H_
