// Per-vCPU exit accounting. Plain arrays of counters: the exit path does an
// increment, never a lock, allocation or syscall. Summed over vCPUs after the
// run.
#ifndef MINIVMM_EXIT_STATS_H_
#define MINIVMM_EXIT_STATS_H_

#include <array>
#include <cstdint>
#include <string_view>

#include "minivmm_abi/hypercall.h"

namespace minivmm {

// Why the VM exited, as decoded from kvm_run (see vmm/core/vcpu_exit.h).
enum class ExitReason : uint8_t {
  kIo,
  kMmio,
  kHlt,
  kIrqWindowOpen,
  kIntr,
  kShutdown,
  kFailEntry,
  kInternalError,
  kSystemEvent,
  kUnknown,
  kCount
};
std::string_view ExitReasonName(ExitReason reason);

// The causes the mission names (docs/design.md "What the VMM counts"), in
// table order: the one list from which the enum, the names in records and
// the CLI's labels and tables derive. X(id, name, label); what feeds each
// is in hypercalls/dispatcher.cc's CauseOf.
//   if_set             set_if(1); interrupt-window exits (host-dependent)
//   if_clear           set_if(0)
//   cr0_write          fpu_taskswitch, write_cr0
//   descriptor_update  update_descriptor, trapped GDT stores
//   page_table_update  mmu_update (operations = PTE requests)
//   cr3_write          mmuext_op (operations = page-table base loads)
//   multicall          multicall calls (operations = entries)
//   ipi                send_ipi (operations = vCPUs targeted)
//   tlb_flush          flush_tlb_others (operations = vCPUs targeted)
//   lock_wait          lock_wait calls accepted (whatever they returned)
//   lock_kick          lock_kick calls accepted
//   yield              sched_op yield and yield_to accepted
// What a vCPU took or deferred without an exit of its own: one uint64_t
// field of ExitStats each, summed by Add, and a key of the run record's
// `causes` and of each `exits.per_vcpu` entry with the same name.
//   timer_injections      its timer's interrupts injected
//   ipi_injections        IPIs (MVMM_IPI_VECTOR) injected into it: one per IPI
//                         sent to it, less those that merged with one pending
//   tlb_flushes_deferred  targets of its flush_tlb_others that were blocked or
//                         halted: flagged in their run-state area, not kicked
//   lock_waits_slept      its lock_wait calls that slept
//   lock_wakes_by_kick    its lock_wait calls that returned
//                         MVMM_LOCK_WAIT_KICKED (a kick consumed, pending or
//                         while asleep)
//   directed_yields       its accepted sched_op(yield_to) calls (also in
//                         cause `yield`)
#define MINIVMM_SCALAR_COUNTER_LIST(X) \
  X(timer_injections)                  \
  X(ipi_injections)                    \
  X(tlb_flushes_deferred)              \
  X(lock_waits_slept)                  \
  X(lock_wakes_by_kick)                \
  X(directed_yields)

#define MINIVMM_CAUSE_LIST(X)                                    \
  X(kIfSet, "if_set", "IF set")                                  \
  X(kIfClear, "if_clear", "IF clear")                            \
  X(kCr0Write, "cr0_write", "CR0 write")                         \
  X(kDescriptorUpdate, "descriptor_update", "descriptor update") \
  X(kPageTableUpdate, "page_table_update", "page-table update")  \
  X(kCr3Write, "cr3_write", "CR3 write")                         \
  X(kMulticall, "multicall", "multicall")                        \
  X(kIpi, "ipi", "IPI")                                          \
  X(kTlbFlush, "tlb_flush", "TLB flush")                         \
  X(kLockWait, "lock_wait", "lock wait")                         \
  X(kLockKick, "lock_kick", "lock kick")                         \
  X(kYield, "yield", "yield")                                    \
  X(kFsBase, "fs_base", "FS base")

enum class Cause : uint8_t {
#define MINIVMM_CAUSE_ENUM_(id, name, label) id,
  MINIVMM_CAUSE_LIST(MINIVMM_CAUSE_ENUM_)
#undef MINIVMM_CAUSE_ENUM_
      kCount
};
// "if_set": the cause's key in records ("?" for kCount).
std::string_view CauseName(Cause cause);
// "IF set": its label in tables.
std::string_view CauseLabel(Cause cause);

struct CauseCount {
  uint64_t ops = 0;    // operations, wherever they were issued
  uint64_t exits = 0;  // exits they took (a multicall's entries share one)
};

// Why an operation or exit was wasted (docs/wasted-exits.md). Counted only
// when the run asked for the analysis (VmConfig::analyse_waste).
enum class WasteReason : uint8_t {
  kSameValue,         // wrote the value already there (IF, CR0, a descriptor, rsp0, a PTE)
  kCancelledPair,     // undone by the next operation of its kind, nothing used in between
  kAllEntriesWasted,  // a multicall exit whose entries were all wasted
  kCount
};
std::string_view WasteReasonName(WasteReason reason);

inline constexpr int kMaxBusDevices = 32;
inline constexpr int kMulticallHistogramBuckets = 11;  // 1, 2-3, 4-7, ..., 512+ entries

struct ExitStats {
  std::array<uint64_t, static_cast<int>(ExitReason::kCount)> by_reason{};
  std::array<uint64_t, kMaxBusDevices> pio_by_device{};   // index from the port bus
  std::array<uint64_t, kMaxBusDevices> mmio_by_device{};  // index from the MMIO bus
  uint64_t pio_unclaimed = 0;
  uint64_t mmio_unclaimed = 0;

  std::array<uint64_t, MVMM_HC_MAX> hc_exits{};   // direct calls
  std::array<uint64_t, MVMM_HC_MAX> hc_ops{};     // direct calls + multicall entries
  std::array<uint64_t, MVMM_HC_MAX> hc_errors{};  // operations that returned < 0
  uint64_t hc_bad_number = 0;                     // out of [0, MVMM_HC_MAX) or unregistered
  uint64_t hc_refused_cpl3 = 0;

  std::array<CauseCount, static_cast<int>(Cause::kCount)> causes{};
  std::array<uint64_t, kMulticallHistogramBuckets> multicall_entries_histogram{};

  uint64_t gdt_stores_applied = 0;
  uint64_t gdt_stores_rejected = 0;
#define MINIVMM_SCALAR_FIELD_(name) uint64_t name = 0;
  MINIVMM_SCALAR_COUNTER_LIST(MINIVMM_SCALAR_FIELD_)
#undef MINIVMM_SCALAR_FIELD_

  // The wasted-exit analysis; all zero when it did not run. `ops` and
  // `exits` as in `causes`: a wasted multicall entry is a wasted operation of
  // its own cause and hypercall, and the multicall exit is wasted (cause
  // multicall) only when all its entries were.
  bool waste_analysed = false;
  std::array<CauseCount, static_cast<int>(Cause::kCount)> wasted_by_cause{};
  std::array<CauseCount, MVMM_HC_MAX> wasted_by_hypercall{};
  std::array<CauseCount, static_cast<int>(WasteReason::kCount)> wasted_by_reason{};
  // Of wasted_by_cause, the ops and exits wasted as same_value (a write of
  // what was already there): verdicts no interrupt timing can change.
  std::array<CauseCount, static_cast<int>(Cause::kCount)> wasted_same_value_by_cause{};
  // CR0.TS set/clear pairs not cancelled only on the guest's word: the clear
  // was tagged MVMM_TS_CLEAR_FOR_NM and the VMM saw no FPU use since the set
  // (fingerprint unchanged or unavailable). Not checked by the VMM.
  uint64_t ts_pairs_kept_by_guest = 0;

  void CountCause(Cause cause, uint64_t ops, uint64_t exits) {
    auto& c = causes[static_cast<int>(cause)];
    c.ops += ops;
    c.exits += exits;
  }

  // Adds every counter of `other` into this one.
  void Add(const ExitStats& other);
};

}  // namespace minivmm

#endif  // MINIVMM_EXIT_STATS_H_
