#include "minivmm/exit_stats.h"

namespace minivmm {
namespace {

CauseCount& operator+=(CauseCount& into, const CauseCount& from) {
  into.ops += from.ops;
  into.exits += from.exits;
  return into;
}

template <typename T, size_t N>
void AddArray(std::array<T, N>& into, const std::array<T, N>& from) {
  for (size_t i = 0; i < N; ++i) into[i] += from[i];
}

}  // namespace

std::string_view ExitReasonName(ExitReason reason) {
  switch (reason) {
    case ExitReason::kIo:
      return "io";
    case ExitReason::kMmio:
      return "mmio";
    case ExitReason::kHlt:
      return "hlt";
    case ExitReason::kIrqWindowOpen:
      return "irq_window_open";
    case ExitReason::kIntr:
      return "intr";
    case ExitReason::kShutdown:
      return "shutdown";
    case ExitReason::kFailEntry:
      return "fail_entry";
    case ExitReason::kInternalError:
      return "internal_error";
    case ExitReason::kSystemEvent:
      return "system_event";
    case ExitReason::kHyperv:
      return "hyperv";
    case ExitReason::kIoapicEoi:
      return "ioapic_eoi";
    case ExitReason::kUnknown:
      return "unknown";
    case ExitReason::kCount:
      break;
  }
  return "?";
}

std::string_view CauseName(Cause cause) {
  switch (cause) {
#define MINIVMM_CAUSE_NAME_(id, name, label) \
  case Cause::id:                            \
    return name;
    MINIVMM_CAUSE_LIST(MINIVMM_CAUSE_NAME_)
#undef MINIVMM_CAUSE_NAME_
    case Cause::kCount:
      break;
  }
  return "?";
}

std::string_view CauseLabel(Cause cause) {
  switch (cause) {
#define MINIVMM_CAUSE_LABEL_(id, name, label) \
  case Cause::id:                             \
    return label;
    MINIVMM_CAUSE_LIST(MINIVMM_CAUSE_LABEL_)
#undef MINIVMM_CAUSE_LABEL_
    case Cause::kCount:
      break;
  }
  return "?";
}

std::string_view WasteReasonName(WasteReason reason) {
  switch (reason) {
    case WasteReason::kSameValue:
      return "same_value";
    case WasteReason::kCancelledPair:
      return "cancelled_pair";
    case WasteReason::kAllEntriesWasted:
      return "all_entries_wasted";
    case WasteReason::kCount:
      break;
  }
  return "?";
}

void ExitStats::Add(const ExitStats& other) {
  AddArray(by_reason, other.by_reason);
  AddArray(pio_by_device, other.pio_by_device);
  AddArray(mmio_by_device, other.mmio_by_device);
  pio_unclaimed += other.pio_unclaimed;
  mmio_unclaimed += other.mmio_unclaimed;
  AddArray(hc_exits, other.hc_exits);
  AddArray(hc_ops, other.hc_ops);
  AddArray(hc_errors, other.hc_errors);
  hc_bad_number += other.hc_bad_number;
  hc_refused_cpl3 += other.hc_refused_cpl3;
  AddArray(causes, other.causes);
  AddArray(multicall_entries_histogram, other.multicall_entries_histogram);
  gdt_stores_applied += other.gdt_stores_applied;
  gdt_stores_rejected += other.gdt_stores_rejected;
#define MINIVMM_ADD_SCALAR_(name) name += other.name;
  MINIVMM_SCALAR_COUNTER_LIST(MINIVMM_ADD_SCALAR_)
#undef MINIVMM_ADD_SCALAR_
  waste_analysed = waste_analysed || other.waste_analysed;
  AddArray(wasted_by_cause, other.wasted_by_cause);
  AddArray(wasted_by_hypercall, other.wasted_by_hypercall);
  AddArray(wasted_by_reason, other.wasted_by_reason);
  AddArray(wasted_same_value_by_cause, other.wasted_same_value_by_cause);
  ts_pairs_kept_by_guest += other.ts_pairs_kept_by_guest;
}

}  // namespace minivmm
