// Kernel event counters. Workloads report the deltas over their run as
// <workload>.<name>; Shutdown() reports the totals as kernel.<name>.
#ifndef GUEST_KERNEL_COUNTERS_H_
#define GUEST_KERNEL_COUNTERS_H_

#include <stdint.h>

#include "lib/format.h"

namespace guest {

// X(name): every counter, in report order. guest/README.md says what each counts.
#define GUEST_COUNTER_LIST(X) \
  X(switches)                 \
  X(nm_traps)                 \
  X(fpu_preloads)             \
  X(fpu_owner_preloads)       \
  X(fpu_saves)                \
  X(fpu_restores)             \
  X(irq_restores_if_set)      \
  X(irq_restores_if_clear)    \
  X(irq_enables)              \
  X(irq_disables)             \
  X(irq_unmasks)              \
  X(irq_unmasks_pending)      \
  X(desc_updates)             \
  X(cr0_writes)               \
  X(cr3_writes)               \
  X(sp0_loads)                \
  X(fs_base_loads)            \
  X(pte_updates)              \
  X(pte_flags_calls)          \
  X(m2p_lookups)              \
  X(p2m_lookups)              \
  X(syscalls)                 \
  X(syscall_ud_fallbacks)     \
  X(timer_irqs)               \
  X(preemptions)              \
  X(idle_blocks)              \
  X(wakeups)                  \
  X(multicalls)               \
  X(multicall_entries)        \
  X(ipis_sent)                \
  X(ipis)                     \
  X(tlb_shootdowns)           \
  X(tlb_flush_targets)        \
  X(tlb_flushes_kicked)       \
  X(remote_enqueues)          \
  X(resched_ipis)             \
  X(migrations)               \
  X(idle_restarts)            \
  X(tick_starts)              \
  X(tick_stops)               \
  X(check_failures)

struct KernelCounters {
#define GUEST_COUNTER_FIELD_(name) uint64_t name;
  GUEST_COUNTER_LIST(GUEST_COUNTER_FIELD_)
#undef GUEST_COUNTER_FIELD_
};

// Appends "<prefix>.<name>=<now - before>" for every counter.
void AppendCounterDeltas(StrView prefix, const KernelCounters& before, const KernelCounters& now,
                         TextBuf* out);

}  // namespace guest

#endif  // GUEST_KERNEL_COUNTERS_H_
