// Records each exit's site (minivmm/exit_sites.h, docs/sites.md) for one
// vCPU's run loop, when the run asked for it (VmConfig::record_sites). The
// loop brackets each exit with Begin and End, or counts it as a repeat
// (CountRepeat) and has nothing to end; a loop without sites is compiled
// without any of these calls (RunLoop::LoopWith's kSites).
#ifndef MINIVMM_VMM_RUN_SITE_RECORDER_H_
#define MINIVMM_VMM_RUN_SITE_RECORDER_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <variant>
#include <vector>

#include "hypercalls/dispatcher.h"
#include "minivmm/exit_sites.h"
#include "minivmm/exit_stats.h"
#include "minivmm/guest_memory.h"
#include "minivmm/vcpu_state.h"
#include "vmm/core/vcpu_exit.h"
#include "vmm/core/waste.h"

namespace minivmm {

// How many recent exits that may be a cancelled pair's first half (those of
// cause cr0_write, if_set or multicall with no verdict yet) keep their site,
// so that a verdict reached later still finds it.
inline constexpr int kSiteHistory = 1024;

class SiteRecorder {
 public:
  // Reads guest frames from `memory`, the exit's counts from `stats` (the
  // loop's own) and the exit's registers from `vcpu` (the loop's vCPU); all
  // must outlive the recorder.
  SiteRecorder(const GuestMemory& memory, const ExitStats& stats, const VcpuState& vcpu);

  // Whether the loop's exits may be repeats (Begin): nothing but the
  // recorder reads their sites (no observer, no wasted-exit analysis).
  // Before the loop.
  void AllowRepeats(bool allowed) {
    repeats_allowed_ = allowed;
    if (!allowed) counted_nr_ = checked_nr_ = kNoRepeat;
  }

  // Before the exit is handled: its registers are still the guest's. A
  // hypercall exit's number is EAX. RunFailed is not an exit and is skipped.
  // Inline, as are Settle's and End's common paths: they run on every exit
  // of a run with sites (docs/sites.md "What it costs").
  [[gnu::always_inline]] void Begin(const VcpuExit& exit, bool hypercall) {
    if (hypercall) {
      const RepeatKey key = Key();
      if (!CountRepeat(key)) BeginHypercall(exit, key);
    } else {
      BeginOther(exit, false);
      pending_ = Pending::kOther;
    }
  }

  // A repeat: the same hypercall from the same RIP as the last exit, with
  // no frame to walk (RBP 0), in ring 0 (SS.DPL 0), where the last site
  // allowed one (RepeatAllowed): its site is the last one. Key is what
  // tells: zero `place`, and `nr` the last site's number.
  struct RepeatKey {
    uint64_t place;  // RIP ^ the last site's | RBP | SS.DPL
    uint64_t nr;     // EAX
  };
  [[gnu::always_inline]] RepeatKey Key() const {
    // The DPL byte as it is: KVM's is 0-3, and any other nonzero value is
    // just not a repeat (BeginOther reads Cpl()).
    return {(regs_[static_cast<int>(Reg::kRip)] ^ repeat_rip_) |
                regs_[static_cast<int>(Reg::kRbp)] | *dpl_,
            static_cast<uint32_t>(regs_[static_cast<int>(Reg::kRax)])};
  }
  // A hypercall exit that is a repeat needing no check after the exit (of a
  // site of no cause that no batch could carry) is counted here, and has no
  // Begin or End; true for one. Never true while repeats are not allowed.
  [[gnu::always_inline]] bool CountRepeat(const RepeatKey& key) {
    if ((key.place | (key.nr ^ counted_nr_)) != 0) return false;
    ++repeats_;
    return true;
  }
  // Begin for a hypercall exit that CountRepeat did not count.
  [[gnu::always_inline]] void BeginHypercall(const VcpuExit& exit, const RepeatKey& key) {
    if ((key.place | (key.nr ^ checked_nr_)) == 0) {
      pending_ = Pending::kRepeat;
      return;
    }
    BeginOther(exit, true);
    pending_ = Pending::kOther;
  }
  // Whether End has anything to do for this exit.
  [[gnu::always_inline]] bool EndPending() const { return pending_ != Pending::kNone; }
  // After the exit was handled (and, with `waste`, its verdict reached),
  // when EndPending.
  [[gnu::always_inline]] void End(const WasteLog* waste, uint64_t sequence) {
    const Pending pending = pending_;
    pending_ = Pending::kNone;
    if (pending == Pending::kRepeat)
      EndRepeat();
    else
      EndOther(waste, sequence);
  }
  // After the exit was handled: the exit's site with its cause settled,
  // valid until the next Begin. Begin must have recorded an exit that was
  // not a repeat (no repeats while an observer reads sites: AllowRepeats).
  [[gnu::always_inline]] const ExitSite& Settle() {
    // Once per exit: an observer's event settles it before End does.
    if (settled_) return current_;
    settled_ = true;
    // A hypercall without a cause moved no cause's count.
    current_.cause = Cause::kCount;
    if (current_.hypercall >= 0 && !HypercallHasCause(static_cast<uint64_t>(current_.hypercall)))
      return current_;
    SettleCause();
    return current_;
  }

  // The sites so far (repeats counted in).
  const ExitSites& sites() {
    FlushRepeats();
    return sites_;
  }

 private:
  // Begin's part for an exit that is not a repeat: its site derived.
  [[gnu::always_inline]] void BeginOther(const VcpuExit& exit, bool hypercall) {
    const VcpuState& vcpu = vcpu_;
    recording_ = !std::holds_alternative<RunFailed>(exit);
    if (!recording_) return;
    settled_ = false;
    current_.reason = ReasonOf(exit);
    current_.hypercall = hypercall ? static_cast<int64_t>(vcpu.Get(Reg::kRax) & 0xFFFFFFFFu) : -1;
    // A clts the guest tags as its #NM handler's (MVMM_TS_CLEAR_FOR_NM, in
    // RSI) comes from a trap in a task's own code, outside any lazy mode: no
    // batch could carry it (the guest's word, as in the wasted-exit
    // analysis; docs/sites.md).
    lazy_ = IsLazyModeCall(current_.hypercall) && !(current_.hypercall == MVMM_HC_fpu_taskswitch &&
                                                    vcpu.Get(Reg::kRsi) == MVMM_TS_CLEAR_FOR_NM);
    current_.user = vcpu.Cpl() == 3;
    const uint64_t rip = vcpu.Get(Reg::kRip);
    const uint64_t rbp = vcpu.Get(Reg::kRbp);
    rip_only_ = rbp == 0;
    // Ring 3's stack is not walked; a zero RBP ends a walk before its first
    // frame (WalkFrames): the RIP alone, without the call.
    if (current_.user || rbp == 0) {
      current_.frames[0] = rip;
      ZeroPast(1);
    } else {
      Walk(rip, rbp);
    }
  }
  // End's for a repeat: the last site again, if the exit moved the cause
  // that site's exits moved (at most one cause moves per exit), or, for a
  // hypercall that has none, none.
  [[gnu::always_inline]] void EndRepeat() {
    const int c = static_cast<int>(repeat_cause_);
    if (repeat_cause_ == Cause::kCount || stats_.causes[c].exits == cause_exits_seen_[c] + 1)
        [[likely]] {
      if (repeat_cause_ != Cause::kCount) ++cause_exits_seen_[c];
      ++repeats_;
      // As EndOther; the last exit was this site, so it was lazy if this is.
      if (last_lazy_) CountBatchable(*last_count_);
      return;
    }
    NotARepeat();
    EndOther(nullptr, 0);
  }
  // End's for any other exit.
  void EndOther(const WasteLog* waste, uint64_t sequence) {
    FlushRepeats();
    if (!recording_) return;
    Settle();
    // Exits come in runs from one site (a loop of hypercalls): the last
    // site's count is kept, valid until the map next inserts (CountAt).
    SiteCount& count = last_count_ != nullptr && current_ == last_site_ ? *last_count_ : CountAt();
    ++count.exits;
    // A run of direct lazy-mode calls with no interrupt between: every exit
    // after the run's first is one a batch could have carried.
    if (lazy_ && last_lazy_) {
      CountBatchable(count);
    } else {
      injections_at_last_ = stats_.timer_injections + stats_.ipi_injections;
    }
    last_lazy_ = lazy_;
    if (waste != nullptr) EndWasted(*waste, sequence, count);
    RepeatAllowed();
  }

  struct Candidate {
    uint64_t sequence = ~0ull;
    ExitSite site;  // the key, not a pointer: the map's values move when it grows
  };
  uint64_t WastedExits() const;
  // A batchable exit (End) if no interrupt came since the last one.
  [[gnu::always_inline]] void CountBatchable(SiteCount& count) {
    const uint64_t injections = stats_.timer_injections + stats_.ipi_injections;
    if (injections == injections_at_last_) ++count.batchable;
    injections_at_last_ = injections;
  }
  // A repeat whose cause differed: the exit as BeginOther would have made
  // it (the last site, its cause to be settled), for EndOther.
  void NotARepeat();
  // After End: whether the next exit may be a repeat of this site (Begin).
  void RepeatAllowed();
  // Begin's walk of a frame chain.
  void Walk(uint64_t rip, uint64_t rbp);
  // The repeats counted since the last site's count was (they are all of
  // that site: last_count_, valid while there are any) into it.
  void FlushRepeats() {
    if (repeats_ == 0) return;
    last_count_->exits += repeats_;
    repeats_ = 0;
  }
  // Frames from `depth` on are zero (exit_sites.h), and `depth` is set.
  void ZeroPast(uint8_t depth) {
    if (current_.depth > depth)
      std::fill(current_.frames.begin() + depth, current_.frames.begin() + current_.depth, 0);
    current_.depth = depth;
  }
  // Settle's search for the cause whose exit count moved.
  void SettleCause();
  // The current site's count, found or made; it becomes the last site.
  SiteCount& CountAt();
  // End's part for the wasted-exit analysis: the verdict, and a cancelled
  // pair's first half placed at its own site.
  void EndWasted(const WasteLog& waste, uint64_t sequence, SiteCount& count);

  const GuestMemory& memory_;
  const ExitStats& stats_;
  const VcpuState& vcpu_;
  // Where vcpu_'s registers and SS.DPL are, for Key.
  const RegWord* regs_;
  const uint8_t* dpl_;
  ExitSites sites_;
  bool recording_ = false;
  bool settled_ = false;  // current_.cause found (Settle) since Begin
  ExitSite current_;
  // Whether this exit and the last were direct lazy-mode calls (Begin), and
  // the interrupts injected until the last (SiteCount::batchable).
  bool lazy_ = false;
  bool last_lazy_ = false;
  uint64_t injections_at_last_ = 0;
  // The last exit's site and its count in sites_.counts (End), and the
  // repeats of it counted since, not yet in that count (FlushRepeats).
  ExitSite last_site_;
  SiteCount* last_count_ = nullptr;
  uint64_t repeats_ = 0;
  // Repeats (Begin): whether the loop allows them; the last site's RIP, its
  // hypercall number as counted_nr_ (a repeat needs no check: no cause and
  // not lazy) or as checked_nr_ (Kind::kRepeat), the other kNoRepeat, which
  // no EAX is (both, when it allows none), and its cause; whether that
  // site's RBP was 0 (rip_only_, set by BeginOther).
  static constexpr uint64_t kNoRepeat = 1ull << 32;
  // What End has to do for the exit Begin saw: nothing (a repeat counted),
  // check a repeat, or end any other exit.
  enum class Pending : uint8_t { kNone, kRepeat, kOther };
  Pending pending_ = Pending::kNone;
  bool repeats_allowed_ = false;
  bool rip_only_ = false;
  uint64_t repeat_rip_ = 0;
  uint64_t counted_nr_ = kNoRepeat;
  uint64_t checked_nr_ = kNoRepeat;
  Cause repeat_cause_ = Cause::kCount;
  // The loop's counts as of the last exit's end: only exits move them
  // (ExitStats::causes and wasted_by_reason), so the cause an exit moved is
  // the one that differs now, found without a copy of all of them per exit.
  // The last exit's cause is tried first (exits come in runs of one kind).
  std::array<uint64_t, static_cast<int>(Cause::kCount)> cause_exits_seen_{};
  Cause last_cause_ = Cause::kCount;
  uint64_t wasted_seen_ = 0;
  // A ring of the last kSiteHistory candidates, newest at next_ - 1.
  std::vector<Candidate> history_;
  size_t next_ = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_RUN_SITE_RECORDER_H_
