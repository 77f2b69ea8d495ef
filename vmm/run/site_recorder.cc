#include "vmm/run/site_recorder.h"

#include <algorithm>

#include "vmm/run/frame_walk.h"

namespace minivmm {

SiteRecorder::SiteRecorder(const GuestMemory& memory, const ExitStats& stats, const VcpuState& vcpu)
    : memory_(memory),
      stats_(stats),
      vcpu_(vcpu),
      regs_(vcpu.registers()),
      dpl_(vcpu.ss_dpl()),
      history_(kSiteHistory) {
  for (int c = 0; c < static_cast<int>(Cause::kCount); ++c)
    cause_exits_seen_[c] = stats_.causes[c].exits;
  wasted_seen_ = WastedExits();
}

uint64_t SiteRecorder::WastedExits() const {
  uint64_t sum = 0;
  for (const CauseCount& c : stats_.wasted_by_reason) sum += c.exits;
  return sum;
}

void SiteRecorder::Walk(uint64_t rip, uint64_t rbp) {
  // What the walk wrote is the stack; past it, zero (ZeroPast).
  ZeroPast(static_cast<uint8_t>(WalkFrames(memory_, rip, rbp, current_.frames, vcpu_.Code32())));
}

void SiteRecorder::SettleCause() {
  // The one cause whose exit count this exit moved (at most one), if any:
  // the last exit's cause first, else each.
  const auto moved = [&](int c) { return stats_.causes[c].exits != cause_exits_seen_[c]; };
  int found = -1;
  if (last_cause_ != Cause::kCount && moved(static_cast<int>(last_cause_))) {
    found = static_cast<int>(last_cause_);
  } else {
    for (int c = 0; c < static_cast<int>(Cause::kCount) && found < 0; ++c)
      if (moved(c)) found = c;
  }
  if (found >= 0) {
    cause_exits_seen_[found] = stats_.causes[found].exits;
    current_.cause = last_cause_ = static_cast<Cause>(found);
  }
}

void SiteRecorder::NotARepeat() {
  // Begin left current_ as the last exit's site, which is this one's but for
  // the cause (RepeatAllowed: a hypercall's, ring 0, the RIP alone).
  recording_ = true;
  settled_ = false;
  rip_only_ = true;
  lazy_ = last_lazy_;
}

void SiteRecorder::RepeatAllowed() {
  // A site of a hypercall, in ring 0, the RIP alone, whose count End keeps
  // (last_count_), and whose cause a repeat can check: its own, or none for
  // a hypercall that has none (a refused call of one that has a cause
  // counts in none, and the next may not). Not fpu_taskswitch, whose
  // laziness depends on RSI (Begin).
  const bool allowed = repeats_allowed_ && rip_only_ && !current_.user && current_.hypercall >= 0 &&
                       current_.hypercall != MVMM_HC_fpu_taskswitch && last_count_ != nullptr &&
                       (current_.cause != Cause::kCount ||
                        !HypercallHasCause(static_cast<uint64_t>(current_.hypercall)));
  const uint64_t nr = allowed ? static_cast<uint64_t>(current_.hypercall) : kNoRepeat;
  const bool checks = current_.cause != Cause::kCount || lazy_;
  counted_nr_ = checks ? kNoRepeat : nr;
  checked_nr_ = checks ? nr : kNoRepeat;
  repeat_rip_ = current_.frames[0];
  repeat_cause_ = current_.cause;
}

SiteCount& SiteRecorder::CountAt() {
  last_count_ = &sites_.counts[current_];
  last_site_ = current_;
  return *last_count_;
}

void SiteRecorder::EndWasted(const WasteLog& waste, uint64_t sequence, SiteCount& count) {
  const std::optional<WasteReason> verdict = waste.verdict();
  if (verdict) ++count.wasted[static_cast<int>(*verdict)];
  // A wasted exit counted now that is not this one: the earlier exit whose
  // operation this one cancelled.
  const uint64_t wasted = WastedExits();
  const uint64_t late = wasted - wasted_seen_ - (verdict ? 1 : 0);
  wasted_seen_ = wasted;
  if (late != 0) {
    const std::optional<uint64_t> cancelled = waste.cancels();
    const Candidate* found = nullptr;
    for (size_t back = 1; cancelled && back <= history_.size(); ++back) {
      const Candidate& c = history_[(next_ + history_.size() - back) % history_.size()];
      if (c.sequence == *cancelled) {
        found = &c;
        break;
      }
    }
    if (found == nullptr) {
      sites_.wasted_unplaced += late;
    } else {
      const WasteReason reason = found->site.cause == Cause::kMulticall
                                     ? WasteReason::kAllEntriesWasted
                                     : WasteReason::kCancelledPair;
      sites_.counts[found->site].wasted[static_cast<int>(reason)] += late;
      last_count_ = nullptr;  // the lookup could have grown the map
    }
  }
  const bool candidate = current_.cause == Cause::kCr0Write || current_.cause == Cause::kIfSet ||
                         current_.cause == Cause::kMulticall;
  if (candidate && !verdict) {
    history_[next_] = Candidate{sequence, current_};
    next_ = (next_ + 1) % history_.size();
  }
}

}  // namespace minivmm
