#include "vmm/run/site_recorder.h"

#include <algorithm>
#include <variant>

#include "vmm/run/frame_walk.h"

namespace minivmm {

uint64_t SiteRecorder::WastedExits() const {
  uint64_t sum = 0;
  for (const CauseCount& c : stats_.wasted_by_reason) sum += c.exits;
  return sum;
}

void SiteRecorder::Begin(const VcpuExit& exit, const VcpuState& vcpu, bool hypercall) {
  recording_ = !std::holds_alternative<RunFailed>(exit);
  if (!recording_) return;
  settled_ = false;
  current_.reason = ReasonOf(exit);
  current_.hypercall = hypercall ? static_cast<int64_t>(vcpu.Get(Reg::kRax) & 0xFFFFFFFFu) : -1;
  current_.user = vcpu.Cpl() == 3;
  const uint64_t rip = vcpu.Get(Reg::kRip);
  const uint8_t before = current_.depth;  // frames past it are zero already
  if (current_.user) {
    current_.frames[0] = rip;
    current_.depth = 1;
  } else {
    current_.depth =
        static_cast<uint8_t>(WalkFrames(memory_, rip, vcpu.Get(Reg::kRbp), current_.frames));
  }
  // What the walk wrote is the stack; past it, zero (exit_sites.h).
  if (before > current_.depth)
    std::fill(current_.frames.begin() + current_.depth, current_.frames.begin() + before, 0);
  for (int c = 0; c < static_cast<int>(Cause::kCount); ++c)
    cause_exits_before_[c] = stats_.causes[c].exits;
  wasted_before_ = WastedExits();
}

const ExitSite& SiteRecorder::Settle() {
  // Once per exit: an observer's event settles it before End does.
  if (settled_) return current_;
  settled_ = true;
  // The cause is the one whose exit count this exit moved (at most one).
  current_.cause = Cause::kCount;
  for (int c = 0; c < static_cast<int>(Cause::kCount); ++c) {
    if (stats_.causes[c].exits != cause_exits_before_[c]) {
      current_.cause = static_cast<Cause>(c);
      break;
    }
  }
  return current_;
}

void SiteRecorder::End(const WasteLog* waste, uint64_t sequence) {
  if (!recording_) return;
  Settle();
  // Exits come in runs from one site (a loop of hypercalls): the last
  // site's count is kept, valid until the map next inserts (here only).
  if (last_count_ == nullptr || !(current_ == last_site_)) {
    last_count_ = &sites_.counts[current_];
    last_site_ = current_;
  }
  SiteCount& count = *last_count_;
  ++count.exits;
  // A run of direct lazy-mode calls with no interrupt between: every exit
  // after the run's first is one a batch could have carried.
  const bool lazy = IsLazyModeCall(current_.hypercall);  // -1 for any other exit
  const uint64_t injections = stats_.timer_injections + stats_.ipi_injections;
  if (lazy && last_lazy_ && injections == injections_at_last_) ++count.batchable;
  last_lazy_ = lazy;
  injections_at_last_ = injections;
  if (waste == nullptr) return;
  const std::optional<WasteReason> verdict = waste->verdict();
  if (verdict) ++count.wasted[static_cast<int>(*verdict)];
  // A wasted exit counted now that is not this one: the earlier exit whose
  // operation this one cancelled.
  const uint64_t late = WastedExits() - wasted_before_ - (verdict ? 1 : 0);
  if (late != 0) {
    const std::optional<uint64_t> cancelled = waste->cancels();
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
