#include "kernel/report.h"

#include "kernel/boot.h"
#include "kernel/console.h"
#include "kernel/counters.h"
#include "kernel/hypercall.h"
#include "kernel/panic.h"

namespace guest {
namespace {

char g_report_storage[MVMM_REPORT_MAX_BYTES];
TextBuf g_report(g_report_storage, sizeof(g_report_storage));

}  // namespace

TextBuf& ReportBuffer() { return g_report; }

void SendReport() {
  if (g_report.overflowed()) {
    g_report.Clear();
    Panic("report record longer than MVMM_REPORT_MAX_BYTES");
  }
  if (!g_boot.under_minivmm) {
    // No report hypercall (QEMU): print the record, one "report: " line per
    // key, so the same results can be compared across hypervisors.
    StrView rest = g_report.View();
    while (!rest.empty()) {
      size_t nl = rest.Find('\n');
      ConsoleWrite("report: ");
      ConsoleWrite(rest.Sub(0, nl + 1));
      rest = rest.Sub(nl + 1);
    }
    g_report.Clear();
    return;
  }
  // Identity mapped: the buffer's address is its gpa.
  Hypercall(MVMM_HC_report, reinterpret_cast<uintptr_t>(g_report.data()), g_report.size());
  g_report.Clear();
}

void AppendCounterDeltas(StrView prefix, const KernelCounters& before, const KernelCounters& now,
                         TextBuf* out) {
#define GUEST_COUNTER_KV_(name) out->Kv(prefix, #name, now.name - before.name);
  GUEST_COUNTER_LIST(GUEST_COUNTER_KV_)
#undef GUEST_COUNTER_KV_
}

}  // namespace guest
