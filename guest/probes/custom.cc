// workload=custom[,n=N]: the guest half of the embedding example (examples/embed,
// docs/API.md). The contract, exactly:
//   1. for i = 1..n: hypercall MVMM_HC_USER_FIRST (64) with RDI = i,
//      RSI = 10 * i; the results are summed; a negative result is an errno:
//      one console line and shutdown with code 1;
//   2. for i = 1..n: outb(i, 0x520);
//   3. one inb(0x520);
//   4. a record with custom.calls = n, custom.sum, custom.port_read (plus the
//      usual counter deltas), then shutdown 0.
// Without an embedder, hypercall 64 gets -ENOSYS and the run ends with 1.
#include "arch/cpu.h"
#include "kernel/console.h"
#include "kernel/hypercall.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"
#include "probes/probe.h"
#include "workloads/workload.h"

namespace guest {

inline constexpr uint16_t kCustomPort = 0x520;

void RunCustom(const WorkloadArgs& args) {
  uint64_t n = args.Get("n");
  WorkloadRecord rec("custom");
  uint64_t sum = 0;
  for (uint64_t i = 1; i <= n; ++i) {
    int64_t rc = Hypercall(MVMM_HC_USER_FIRST, i, 10 * i);
    if (rc < 0) {
      char storage[200];
      TextBuf msg(storage, sizeof(storage));
      msg.Str("custom: hypercall ").Dec(MVMM_HC_USER_FIRST).Str(" (i=").Dec(i).Str(") failed: ");
      AppendResult(rc, &msg);
      if (rc == -MVMM_ENOSYS) msg.Str(": no embedder registered it (see examples/)");
      ++Kc().check_failures;
      Fatal(kExitCheckFailed, msg.View());
    }
    sum += static_cast<uint64_t>(rc);
  }
  for (uint64_t i = 1; i <= n; ++i) cpu::Outb(kCustomPort, static_cast<uint8_t>(i));
  uint8_t port_read = cpu::Inb(kCustomPort);
  rec.Put("calls", n);
  rec.Put("sum", sum);
  rec.Put("port_read", port_read);
  rec.Finish(0);
}

}  // namespace guest
