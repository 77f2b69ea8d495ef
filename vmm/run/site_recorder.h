// Records each exit's site (minivmm/exit_sites.h, docs/sites.md) for one
// vCPU's run loop, when the run asked for it (VmConfig::record_sites). The
// loop brackets each exit with Begin and End; a loop without sites is
// compiled without either call (RunLoop::LoopWith's kSites).
#ifndef MINIVMM_VMM_RUN_SITE_RECORDER_H_
#define MINIVMM_VMM_RUN_SITE_RECORDER_H_

#include <array>
#include <cstdint>
#include <vector>

#include "hypercalls/waste.h"
#include "minivmm/exit_sites.h"
#include "minivmm/exit_stats.h"
#include "minivmm/guest_memory.h"
#include "minivmm/vcpu_state.h"
#include "vmm/core/vcpu_exit.h"

namespace minivmm {

// How many recent exits that may be a cancelled pair's first half (those of
// cause cr0_write, if_set or multicall with no verdict yet) keep their site,
// so that a verdict reached later still finds it.
inline constexpr int kSiteHistory = 1024;

class SiteRecorder {
 public:
  // Reads guest frames from `memory` and the exit's counts from `stats` (the
  // loop's own); both must outlive the recorder.
  SiteRecorder(const GuestMemory& memory, const ExitStats& stats)
      : memory_(memory), stats_(stats), history_(kSiteHistory) {}

  // Before the exit is handled: its registers are still the guest's. A
  // hypercall exit's number is EAX. RunFailed is not an exit and is skipped.
  void Begin(const VcpuExit& exit, const VcpuState& vcpu, bool hypercall);
  // After the exit was handled: the exit's site with its cause settled,
  // valid until the next Begin. Begin must have recorded an exit.
  const ExitSite& Settle();
  // After the exit was handled (and, with `waste`, its verdict reached).
  void End(const WasteLog* waste, uint64_t sequence);

  const ExitSites& sites() const { return sites_; }

 private:
  struct Candidate {
    uint64_t sequence = ~0ull;
    ExitSite site;  // the key, not a pointer: the map's values move when it grows
  };
  uint64_t WastedExits() const;

  const GuestMemory& memory_;
  const ExitStats& stats_;
  ExitSites sites_;
  bool recording_ = false;
  bool settled_ = false;  // current_.cause found (Settle) since Begin
  ExitSite current_;
  // Whether the last exit was a direct lazy-mode call, and the interrupts
  // injected until then (SiteCount::batchable).
  bool last_lazy_ = false;
  uint64_t injections_at_last_ = 0;
  // The last exit's site and its count in sites_.counts (End).
  ExitSite last_site_;
  SiteCount* last_count_ = nullptr;
  std::array<uint64_t, static_cast<int>(Cause::kCount)> cause_exits_before_{};
  uint64_t wasted_before_ = 0;
  // A ring of the last kSiteHistory candidates, newest at next_ - 1.
  std::vector<Candidate> history_;
  size_t next_ = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_RUN_SITE_RECORDER_H_
