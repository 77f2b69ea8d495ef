#include "workloads/workload.h"

#include "arch/cpu.h"
#include "kernel/boot.h"
#include "kernel/console.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"
#include "kernel/report.h"
#include "lib/workload_list.h"

namespace guest {

uint64_t g_checks_passed = 0;

WorkloadRecord::WorkloadRecord(const char* name) : name_(name), kc_before_(Kc()), hc_before_(Hc()) {
  ReportBuffer().Clear();
}

void WorkloadRecord::Put(StrView key, uint64_t value) { ReportBuffer().Kv(name_, key, value); }

void WorkloadRecord::PutTiming(uint64_t ops, uint64_t tsc_total, uint64_t baseline_total) {
  if (ops == 0) ops = 1;
  Put("tsc_total", tsc_total);
  Put("tsc_per_op", tsc_total / ops);
  Put("tsc_baseline_per_op", baseline_total / ops);
  Put("tsc_net_per_op", tsc_total > baseline_total ? (tsc_total - baseline_total) / ops : 0);
}

void WorkloadRecord::Finish(uint64_t checks_passed, uint64_t checks_failed) {
  TextBuf& r = ReportBuffer();
  if constexpr (kCounters) AppendCountsSince(r);
  g_checks_passed += checks_passed;
  r.Str("check.").Str(name_).Str(".passed=").Dec(checks_passed).Char('\n');
  r.Str("check.").Str(name_).Str(".failed=").Dec(checks_failed).Char('\n');
  SendReport();
}

void WorkloadRecord::AppendCountsSince(TextBuf& r) {
  AppendCounterDeltas(name_, kc_before_, Kc(), &r);
  // Hypercalls issued during the workload (the record's own report call
  // comes after and is not included).
  uint64_t exits = 0;
  uint64_t ops = 0;
  for (int i = 0; i < MVMM_HC_MAX; ++i) {
    exits += Hc().exits[i] - hc_before_.exits[i];
    ops += Hc().ops[i] - hc_before_.ops[i];
  }
  Put("hc_exits", exits);
  Put("hc_ops", ops);
}

uint64_t EmptyLoopTsc(uint64_t iterations) {
  uint64_t t0 = cpu::Rdtsc();
  for (uint64_t i = 0; i < iterations; ++i) asm volatile("" ::: "memory");
  return cpu::Rdtsc() - t0;
}

namespace {

using Runner = void (*)(const WorkloadArgs&);

// Each workload's runner, in lib/workload_list.h's order (WorkloadTable's).
constexpr Runner kRunners[] = {
#define GUEST_WORKLOAD_RUNNER_(name, runner, params, flags, op, op_counter, time_op, bench) runner,
    GUEST_WORKLOAD_LIST(GUEST_WORKLOAD_RUNNER_)
#undef GUEST_WORKLOAD_RUNNER_
};

void Run(const WorkloadArgs& args) {
  const WorkloadSpec* spec = args.spec;
  // A workload that talks to minivmm (or an embedder of it) has nothing to
  // do where port 0xEC is nobody's (QEMU).
  if ((spec->flags & kWorkloadNeedsMinivmm) != 0 && !g_boot.under_minivmm) {
    char storage[96];
    TextBuf msg(storage, sizeof(storage));
    msg.Str("workload=").Str(spec->name).Str(" needs minivmm's hypercalls (not available here)");
    Fatal(kExitBadCmdline, msg.View());
  }
  if ((spec->flags & kWorkloadNeedsCounters) != 0 && !kCounters) {
    char storage[112];
    TextBuf msg(storage, sizeof(storage));
    msg.Str("workload=")
        .Str(spec->name)
        .Str(" checks the kernel's counts (not in the uncounted kernel)");
    Fatal(kExitBadCmdline, msg.View());
  }
  kRunners[spec - WorkloadTable()](args);
}

}  // namespace

void RunWorkload(const Config& config) { Run(config.workload); }

void RunNone(const WorkloadArgs&) {}

// Every workload marked kWorkloadInAll, with its default parameters, in
// the list's order.
void RunAll(const WorkloadArgs&) {
  for (const WorkloadSpec* w = WorkloadTable(); w->name != nullptr; ++w) {
    if ((w->flags & kWorkloadInAll) == 0) continue;
    WorkloadArgs args;
    args.spec = w;
    for (int i = 0; i < w->param_count; ++i) args.values[i] = w->params[i].default_value;
    Run(args);
  }
}

void RunHello(const WorkloadArgs& args) {
  WorkloadRecord rec("hello");
  ConsoleStats before = GetConsoleStats();
  uint64_t lines = args.Get("lines");
  for (uint64_t i = 1; i <= lines; ++i) {
    char storage[32];
    TextBuf line(storage, sizeof(storage));
    line.Str("hello ").Dec(i).Char('\n');
    ConsoleWrite(line.View());
  }
  ConsoleStats after = GetConsoleStats();
  rec.Put("lines", lines);
  rec.Put("console.calls", after.calls - before.calls);
  rec.Put("console.bytes", after.bytes - before.bytes);
  rec.Finish(0);
}

}  // namespace guest
