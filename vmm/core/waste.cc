#include "vmm/core/waste.h"

#include <algorithm>

namespace minivmm {

void WasteLog::Op(int64_t source, Cause cause, OpEffect effect, std::optional<uint64_t> fpu) {
  ++current_.noted;
  current_.source = source;
  current_.cause = cause;
  switch (effect) {
    case OpEffect::kChanged:
      return;
    case OpEffect::kUnchanged:
      Wasted(source, cause, WasteReason::kSameValue);
      ++current_.wasted;
      current_.reason = WasteReason::kSameValue;
      return;
    case OpEffect::kTsSet:
      Replace(ts_set_, Pending{source, cause, current_.sequence, fpu});
      return;
    case OpEffect::kTsClear:
      if (!FpuUsedSinceTsSet(fpu)) {
        Cancel(ts_set_, source, cause);
        return;
      }
      [[fallthrough]];  // the registers changed: the FPU was used, as after an #NM
    case OpEffect::kTsClearForFpu:
      // Kept on the guest's word alone when the VMM saw no FPU use.
      if (effect == OpEffect::kTsClearForFpu && ts_set_ && !FpuUsedSinceTsSet(fpu))
        ++stats_.ts_pairs_kept_by_guest;
      Replace(ts_set_, std::nullopt);
      return;
    case OpEffect::kIfEnable:
      // With an interrupt waiting, the enable is what lets it in.
      Replace(if_enable_, interrupt_pending_
                              ? std::nullopt
                              : std::optional(Pending{source, cause, current_.sequence}));
      return;
    case OpEffect::kIfDisable:
      Cancel(if_enable_, source, cause);
      return;
  }
}

void WasteLog::Wasted(int64_t source, Cause cause, WasteReason reason) {
  if (cause != Cause::kCount) ++stats_.wasted_by_cause[static_cast<int>(cause)].ops;
  if (source >= 0 && source < MVMM_HC_MAX) ++stats_.wasted_by_hypercall[source].ops;
  ++stats_.wasted_by_reason[static_cast<int>(reason)].ops;
  if (reason == WasteReason::kSameValue && cause != Cause::kCount)
    ++stats_.wasted_same_value_by_cause[static_cast<int>(cause)].ops;
}

// The operation just noted undoes `first`: both are wasted.
void WasteLog::Cancel(std::optional<Pending>& first, int64_t source, Cause cause) {
  if (!first) return;
  Wasted(first->source, first->cause, WasteReason::kCancelledPair);
  Wasted(source, cause, WasteReason::kCancelledPair);
  ++current_.wasted;
  current_.reason = WasteReason::kCancelledPair;
  if (first->sequence == current_.sequence) {
    ++current_.wasted;
  } else {
    auto it = std::find_if(open_.begin(), open_.end(),
                           [&](const Exit& e) { return e.sequence == first->sequence; });
    if (it != open_.end()) {
      ++it->wasted;
      if (!it->multicall) it->reason = WasteReason::kCancelledPair;
      MaybeCountExit(*it);
    }
    current_.cancels = first->sequence;
  }
  Replace(first, std::nullopt);
}

// Sets a pending operation, and forgets the ended exit the old one came in
// once nothing refers to it.
void WasteLog::Replace(std::optional<Pending>& pending, std::optional<Pending> with) {
  const std::optional<uint64_t> old = pending ? std::optional(pending->sequence) : std::nullopt;
  pending = with;
  if (old && !Referenced(*old)) {
    std::erase_if(open_, [&](const Exit& e) { return e.sequence == *old; });
  }
}

bool WasteLog::Referenced(uint64_t sequence) const {
  return (ts_set_ && ts_set_->sequence == sequence) ||
         (if_enable_ && if_enable_->sequence == sequence);
}

void WasteLog::Close() {
  if (current_.multicall) {
    current_.source = MVMM_HC_multicall;
    current_.cause = Cause::kMulticall;
    current_.reason = WasteReason::kAllEntriesWasted;
  }
  MaybeCountExit(current_);
  last_ = Last{current_.sequence, current_.counted ? std::optional(current_.reason) : std::nullopt,
               current_.cancels};
  if (Referenced(current_.sequence)) open_.push_back(current_);
  const uint64_t sequence = current_.sequence;
  current_ = Exit{};
  current_.sequence = sequence;
}

void WasteLog::MaybeCountExit(Exit& exit) {
  if (exit.counted || exit.noted == 0 || exit.wasted < exit.noted || exit.unnoted_entries != 0)
    return;
  exit.counted = true;
  if (exit.cause != Cause::kCount) ++stats_.wasted_by_cause[static_cast<int>(exit.cause)].exits;
  if (exit.source >= 0 && exit.source < MVMM_HC_MAX)
    ++stats_.wasted_by_hypercall[exit.source].exits;
  ++stats_.wasted_by_reason[static_cast<int>(exit.reason)].exits;
  if (exit.reason == WasteReason::kSameValue && exit.cause != Cause::kCount)
    ++stats_.wasted_same_value_by_cause[static_cast<int>(exit.cause)].exits;
}

}  // namespace minivmm
