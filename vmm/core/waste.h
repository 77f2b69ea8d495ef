// The wasted-exit analysis (docs/wasted-exits.md): which operations, and so
// which exits, changed nothing the guest could observe.
//
// The handlers and the GDT trap know what each operation they apply did to
// the state they own (RFLAGS.IF, CR0, CR3, a GDT slot, the TSS's rsp0, the
// FS base, a PTE); when the run asked for the analysis they tell the
// WasteLog through ExitContext::waste with one call per applied operation (a
// handler through hc::NoteHypercallOp, under the cause its call is counted
// under). The run loop brackets each exit with BeginExit/EndExit and gets the
// exit's verdict. A run without the analysis has a null ExitContext::waste,
// and the handlers' only cost is that test.
//
// Verdicts, per operation:
//   same value      it wrote what was already there;
//   cancelled pair  a CR0.TS set undone by the next TS change, a clear not
//                   made for the #NM handler and with the FPU registers as
//                   they were at the set (so no FPU use in between), or
//                   an IF enable made with no interrupt pending and undone by
//                   the next IF change before any interrupt was injected:
//                   both operations of the pair are wasted.
// Per exit: a direct hypercall or trapped store is wasted when its operation
// is; a multicall exit when every one of its entries is (all entries
// wasted). Refused operations are not wasted: they are errors, counted as
// such. The counts go to ExitStats::wasted_*, the same_value verdicts also
// to wasted_same_value_by_cause.
//
// One verdict is the guest's, not the VMM's: a TS clear the guest tags
// MVMM_TS_CLEAR_FOR_NM ends a pair as not cancelled, and the VMM cannot check
// the tag (the #NM comes before the instruction that uses the FPU). Each pair
// kept that way while the VMM's own fingerprint saw no FPU use is counted in
// ExitStats::ts_pairs_kept_by_guest.
#ifndef MINIVMM_VMM_CORE_WASTE_H_
#define MINIVMM_VMM_CORE_WASTE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "minivmm/exit_stats.h"

namespace minivmm {

// What one applied operation did to the state it writes.
enum class OpEffect : uint8_t {
  kChanged,        // changed it, and has no pair to cancel
  kUnchanged,      // wrote the value already there
  kTsSet,          // CR0.TS 0 -> 1
  kTsClear,        // CR0.TS 1 -> 0
  kTsClearForFpu,  // CR0.TS 1 -> 0 by the guest's #NM handler: the FPU is in use
  kIfEnable,       // RFLAGS.IF 0 -> 1
  kIfDisable,      // RFLAGS.IF 1 -> 0
};

// Where an operation came from: its hypercall number, or kTrappedStore for a
// guest store into the GDT page.
inline constexpr int64_t kTrappedStore = -1;

class WasteLog {
 public:
  explicit WasteLog(ExitStats& stats) : stats_(stats) { stats_.waste_analysed = true; }
  WasteLog(const WasteLog&) = delete;
  WasteLog& operator=(const WasteLog&) = delete;

  // The run loop, around each exit. `interrupt_pending`: the VMM holds an
  // interrupt it has not injected yet.
  // Two stores: an exit without operations (most) costs nothing more.
  void BeginExit(uint64_t sequence, bool interrupt_pending) {
    current_.sequence = sequence;
    interrupt_pending_ = interrupt_pending;
  }
  void EndExit() {
    if (current_.noted != 0) [[unlikely]]
      Close();
  }
  // The run loop injected an interrupt: a pending IF enable did its job.
  void InterruptInjected() { Replace(if_enable_, std::nullopt); }

  // The exit just ended: its verdict (none when it was not wasted) and the
  // exit whose operation it cancelled, if any.
  std::optional<WasteReason> verdict() const {
    return last_.sequence == current_.sequence ? last_.verdict : std::nullopt;
  }
  std::optional<uint64_t> cancels() const {
    return last_.sequence == current_.sequence ? last_.cancels : std::nullopt;
  }

  // Handlers and devices: one applied operation of `cause` (Cause::kCount
  // for an operation without one) from `source`.
  // A handler applying several (mmu_update) notes each, once all applied.
  // `fpu`: for kTsSet, kTsClear and kTsClearForFpu, the vCPU's FPU fingerprint
  // (VcpuState::FpuFingerprint) when the change was made. A plain clear
  // that finds it different from the set's means the FPU was used in
  // between (the guest saw no #NM to say so), as kTsClearForFpu; when either
  // is missing the analysis cannot tell and takes the pair as cancelled.
  // A kTsClearForFpu keeps the pair whatever the fingerprint says; one that
  // finds it unchanged (or missing) counts as kept on the guest's word.
  void Op(int64_t source, Cause cause, OpEffect effect, std::optional<uint64_t> fpu = std::nullopt);
  // The multicall handler, around each entry: an entry that failed or noted
  // nothing keeps its exit from being wasted.
  void BeginEntry() {
    current_.multicall = true;
    entry_noted_ = current_.noted;
  }
  void EndEntry(bool ok) {
    if (!ok || current_.noted == entry_noted_) ++current_.unnoted_entries;
  }

 private:
  // An exit with operations the analysis saw.
  struct Exit {
    uint64_t sequence = 0;
    uint64_t noted = 0;            // operations noted
    uint64_t wasted = 0;           // of those, wasted (so far: a pair may complete later)
    uint64_t unnoted_entries = 0;  // multicall entries that failed or noted nothing
    bool multicall = false;
    // The last operation noted: the single operation of a direct exit.
    int64_t source = kTrappedStore;
    Cause cause = Cause::kCount;
    WasteReason reason = WasteReason::kSameValue;
    bool counted = false;             // counted as a wasted exit
    std::optional<uint64_t> cancels;  // the earlier exit one of its operations undid
  };
  // The verdict of the last exit that had operations.
  struct Last {
    uint64_t sequence = ~0ull;
    std::optional<WasteReason> verdict;
    std::optional<uint64_t> cancels;
  };
  // A TS set or IF enable that a later operation may cancel.
  struct Pending {
    int64_t source;
    Cause cause;
    uint64_t sequence;                           // the exit it came in
    std::optional<uint64_t> fpu = std::nullopt;  // a TS set's FPU fingerprint
  };

  void Wasted(int64_t source, Cause cause, WasteReason reason);
  // A plain TS clear with fingerprint `fpu`: the FPU registers differ from
  // the pending set's.
  bool FpuUsedSinceTsSet(std::optional<uint64_t> fpu) const {
    return ts_set_ && ts_set_->fpu && fpu && *ts_set_->fpu != *fpu;
  }
  void Cancel(std::optional<Pending>& first, int64_t source, Cause cause);
  void Replace(std::optional<Pending>& pending, std::optional<Pending> with);
  void Close();
  // Counts `exit` as wasted once all its operations are.
  void MaybeCountExit(Exit& exit);
  bool Referenced(uint64_t sequence) const;

  ExitStats& stats_;
  Exit current_;  // between exits: no operations, only the next sequence
  bool interrupt_pending_ = false;
  Last last_;
  std::optional<Pending> ts_set_;
  std::optional<Pending> if_enable_;
  uint64_t entry_noted_ = 0;
  // Ended exits a pending operation came in, still open to a late verdict.
  std::vector<Exit> open_;
};

// The call the GDT trap makes (the handlers' is hc::NoteHypercallOp):
// nothing when the run has no analysis.
inline void NoteOp(WasteLog* log, int64_t source, Cause cause, OpEffect effect) {
  if (log != nullptr) [[unlikely]]
    log->Op(source, cause, effect);
}

}  // namespace minivmm

#endif  // MINIVMM_VMM_CORE_WASTE_H_
