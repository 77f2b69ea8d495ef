// workload=irq: nested spin_lock_irqsave/irqrestore. With depth d, each
// loop restores once with IF set (the outermost) and d-1 times with IF
// clear, which is where irq_restore=naive and =optimized differ.
// pending=1 arms a one-shot timer (set_timer_op) before every outermost
// restore, so an interrupt is pending when IF comes back on.
#include "arch/cpu.h"
#include "kernel/boot.h"
#include "kernel/hypercall.h"
#include "kernel/panic.h"
#include "kernel/sched.h"
#include "pv/pv_ops.h"
#include "workloads/workload.h"

namespace guest {

void RunIrq(const WorkloadArgs& args) {
  uint64_t loops = args.Get("loops");
  uint64_t depth = args.Get("depth");
  // Needs set_timer_op: only under minivmm (elsewhere pending=1 is a no-op).
  bool pending = args.Get("pending") == 1 && g_boot.under_minivmm;
  SpinLock locks[8];
  uint64_t flags[8];

  constexpr uint64_t kIf = 1u << 9;
  uint64_t checks = 0;
  WorkloadRecord rec("irq");
  uint64_t t0 = cpu::Rdtsc();
  for (uint64_t i = 0; i < loops; ++i) {
    for (uint64_t d = 0; d < depth; ++d) flags[d] = locks[d].LockIrqSave();
    // A deadline in the past (1 ns of guest time): fires at once.
    if (pending) HypercallOrDie(MVMM_HC_set_timer_op, 1);
    for (uint64_t d = depth; d-- > 0;) {
      locks[d].UnlockIrqRestore(flags[d]);
      // Self-check: the restore left IF exactly as it was when that level
      // saved it (clear for inner levels, set for the outermost).
      if ((ArchSaveFlags() & kIf) != (flags[d] & kIf))
        Fatal(kExitCheckFailed, "irq: IF after restore differs from the saved flags");
      ++checks;
    }
  }
  uint64_t elapsed = cpu::Rdtsc() - t0;
  rec.Put("loops", loops);
  rec.Put("depth", depth);
  rec.Put("restores", loops * depth);
  rec.PutTiming(loops * depth, elapsed, EmptyLoopTsc(loops * depth));
  rec.Finish(checks);
}

}  // namespace guest
