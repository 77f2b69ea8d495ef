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
  kHyperv,
  kIoapicEoi,
  kUnknown,
  kCount
};
std::string_view ExitReasonName(ExitReason reason);

// What a vCPU took or deferred without an exit of its own, and what the VMM
// found wrong at its exits: one uint64_t
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
//   identity_mismatches   its hypercall exits on a GDT base or TR other
//                         than the VMM gave it (checked only in a build
//                         without NDEBUG; 0 otherwise): a VMM fault
#define MINIVMM_SCALAR_COUNTER_LIST(X) \
  X(timer_injections)                  \
  X(ipi_injections)                    \
  X(tlb_flushes_deferred)              \
  X(lock_waits_slept)                  \
  X(lock_wakes_by_kick)                \
  X(directed_yields)                   \
  X(identity_mismatches)

// The causes (docs/design.md "What the VMM counts"), in table order: the
// one list from which the enum, the names in records and the CLI's labels
// and tables derive. X(id, name, label). What feeds each cause is
// MINIVMM_HYPERCALL_CAUSE_LIST below, with two feeds that are not
// hypercalls: if_set also counts interrupt-window exits (host-dependent),
// and descriptor_update the trapped GDT stores that were applied. A cause
// of its own for an op is a line here and a row below
// (docs/extending.md (a)).
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
  X(kFsBase, "fs_base", "FS base")                               \
  X(kSp0Load, "sp0_load", "sp0 load")

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

// The one list of the hypercalls that feed a cause: the dispatcher's
// CauseOf and kHypercallHasCause (hypercalls/dispatcher.h) read it, and no
// hypercall is a special case of the counting. A hypercall may have
// several rows, one per command; rows of one hypercall are adjacent.
//
// X(hypercall, command, cause, ops)
//   hypercall  its name in MVMM_HYPERCALL_LIST
//   command    the first argument the row is for, or kAnyCommand (any)
//   cause      the Cause its operations count under
//   ops        its operations when it succeeds (0 when it fails): kOne;
//              kResult, the operations it returned; kSecondArg, a
//              multicall's entry count; kFirstArgBits, the CPUs of its
//              first argument's mask (every target of a flush)
#define MINIVMM_HYPERCALL_CAUSE_LIST(X)                      \
  X(set_if, 1, kIfSet, kOne)                                 \
  X(set_if, 0, kIfClear, kOne)                               \
  X(force_evtchn_callback, kAnyCommand, kIfSet, kOne)        \
  X(fpu_taskswitch, kAnyCommand, kCr0Write, kOne)            \
  X(write_cr0, kAnyCommand, kCr0Write, kOne)                 \
  X(update_descriptor, kAnyCommand, kDescriptorUpdate, kOne) \
  X(mmu_update, kAnyCommand, kPageTableUpdate, kResult)      \
  X(mmuext_op, kAnyCommand, kCr3Write, kResult)              \
  X(multicall, kAnyCommand, kMulticall, kSecondArg)          \
  X(send_ipi, kAnyCommand, kIpi, kResult)                    \
  X(flush_tlb_others, kAnyCommand, kTlbFlush, kFirstArgBits) \
  X(lock_wait, kAnyCommand, kLockWait, kOne)                 \
  X(lock_kick, kAnyCommand, kLockKick, kOne)                 \
  X(sched_op, MVMM_SCHEDOP_YIELD, kYield, kOne)              \
  X(sched_op, MVMM_SCHEDOP_YIELD_TO, kYield, kOne)           \
  X(set_segment_base, kAnyCommand, kFsBase, kOne)            \
  X(stack_switch, kAnyCommand, kSp0Load, kOne)

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
