#include "kernel/panic.h"

#include "arch/cpu.h"
#include "kernel/boot.h"
#include "kernel/console.h"
#include "kernel/counters.h"
#include "kernel/hypercall.h"
#include "kernel/percpu.h"
#include "kernel/report.h"
#include "kernel/smp.h"
#include "minivmm_abi/boot.h"
#include "pv/pv_ops.h"
#include "workloads/workload.h"

namespace guest {
namespace {

bool g_shutting_down = false;

void AppendFinalCounts(TextBuf* out);

// The kernel.* record. Its hc counts include this report and the shutdown
// that follows, so they equal the VMM's totals for the whole run.
void SendFinalReport(int code) {
  TextBuf& r = ReportBuffer();
  r.Clear();
  ConsoleStats cs = GetConsoleStats();
  r.Kv("kernel.exit_code", static_cast<uint64_t>(code));
  r.Kv("check.passed", g_checks_passed);
  r.Kv("check.failed", Kc().check_failures);
  r.Kv("kernel.console.calls", cs.calls);
  r.Kv("kernel.console.bytes", cs.bytes);
  r.Kv("kernel.ring3_nm", g_boot.ring3_nm ? 1 : 0);
  r.Kv("kernel.patched_sites", g_boot.patched_sites);
  r.Kv("kernel.counters", kCounters ? 1 : 0);
  AppendSmpReport(&r);
  if constexpr (kCounters) AppendFinalCounts(&r);
  if (r.overflowed()) r.Clear().Kv("kernel.report_overflow", 1);
  SendReport();
}

// kernel.<counter> and kernel.hc*: the totals, this report and the
// shutdown that follows included.
void AppendFinalCounts(TextBuf* out) {
  TextBuf& r = *out;
  KernelCounters zero = {};
  AppendCounterDeltas("kernel", zero, Kc(), &r);
  HypercallCounts c = Hc();
  c.ops[MVMM_HC_report]++;
  c.exits[MVMM_HC_report]++;
  if (g_boot.under_minivmm) {
    c.ops[MVMM_HC_sched_op]++;
    c.exits[MVMM_HC_sched_op]++;
  }
  AppendHypercallCounts("kernel", c, &r);
}

}  // namespace

void Shutdown(int code) {
  if (!g_shutting_down) {
    g_shutting_down = true;  // a fault while reporting must not recurse
    // No interrupt may land once the counters are being read: formatting the
    // record takes tens of milliseconds of emulated ring 0, and a timer tick
    // taken then would be injected (and counted) by the VMM but missing from
    // the record. Through pv_ops when installed, so the disable is counted.
    if (pv_ops.irq_disable != nullptr) {
      ArchIrqDisable();
    } else {
      cpu::Cli();
    }
    SendFinalReport(code);
  }
  if (g_boot.under_minivmm) {
    Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, static_cast<uint64_t>(code));
  }
  // QEMU isa-debug-exit (and the fallback if sched_op returned).
  cpu::Outb(MVMM_DEBUG_EXIT_PORT, static_cast<uint8_t>(code));
  for (;;) {
    cpu::Cli();
    asm volatile("hlt");
  }
}

void Fatal(int code, StrView msg) {
  ConsoleLine(msg);
  Shutdown(code);
}

void Panic(StrView msg) {
  char storage[200];
  TextBuf line(storage, sizeof(storage));
  line.Str("panic: ").Str(msg);
  Fatal(kExitAssert, line.View());
}

void AssertFailed(const char* expr, const char* file, int line) {
  char storage[200];
  TextBuf msg(storage, sizeof(storage));
  msg.Str("assertion failed: ")
      .Str(expr)
      .Str(" at ")
      .Str(file)
      .Char(':')
      .Dec(static_cast<uint64_t>(line));
  Fatal(kExitAssert, msg.View());
}

}  // namespace guest
