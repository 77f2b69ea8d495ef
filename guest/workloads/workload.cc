#include "workloads/workload.h"

#include "arch/cpu.h"
#include "kernel/boot.h"
#include "kernel/console.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"
#include "kernel/report.h"

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
  g_checks_passed += checks_passed;
  r.Str("check.").Str(name_).Str(".passed=").Dec(checks_passed).Char('\n');
  r.Str("check.").Str(name_).Str(".failed=").Dec(checks_failed).Char('\n');
  SendReport();
}

uint64_t EmptyLoopTsc(uint64_t iterations) {
  uint64_t t0 = cpu::Rdtsc();
  for (uint64_t i = 0; i < iterations; ++i) asm volatile("" ::: "memory");
  return cpu::Rdtsc() - t0;
}

void RunWorkload(const Config& config) {
  const WorkloadArgs& a = config.workload;
  StrView name(a.spec->name);
  if (name == "none") return;
  if (name == "hello") return RunHello(a);
  if (name == "fault") return RunFault(a);
  if (name == "ctx") return RunRing("ctx", a.Get("tasks"), a);
  if (name == "pipe") return RunRing("pipe", 2, a);
  if (name == "irq") return RunIrq(a);
  if (name == "cpa") return RunCpa(a);
  if (name == "fpu") return RunFpu(a);
  if (name == "shootdown") return RunShootdown(a);
  if (name == "lock") return RunLock(a);
  if (name == "aim") return RunAim(a);
  if (name == "custom" || name == "hcall" || name == "hostile" || name == "hostprobe" ||
      name == "exitcost") {
    // They exist to talk to minivmm (or an embedder of it): nothing to do
    // where port 0xEC is nobody's (QEMU).
    if (!g_boot.under_minivmm) {
      char storage[96];
      TextBuf msg(storage, sizeof(storage));
      msg.Str("workload=").Str(name).Str(" needs minivmm's hypercalls (not available here)");
      Fatal(kExitBadCmdline, msg.View());
    }
    if (name == "custom") return RunCustom(a);
    if (name == "hcall") return RunHcall(a);
    if (name == "hostprobe") return RunHostProbe(a);
    if (name == "exitcost") return RunExitCost(a);
    return RunHostile(a);
  }
  if (name == "all") {
    // Every workload with its default parameters, in this order.
    const char* const kOrder[] = {"ctx", "pipe", "irq", "cpa", "fpu"};
    for (const char* w : kOrder) {
      Config c = config;
      c.workload.spec = FindWorkload(w);
      for (int i = 0; i < c.workload.spec->param_count; ++i) {
        c.workload.values[i] = c.workload.spec->params[i].default_value;
      }
      RunWorkload(c);
    }
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
