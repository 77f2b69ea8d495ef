// A vCPU's last exits in a ring (VmConfig::recent_exits, docs/design.md
// "Recent exits"): RunLoop::LoopWith's kRecent notes each exit here, from
// the decoded exit and the synced registers (no ioctl), before handling it.
// Only the vCPU's own thread writes it; it is read once the loop has
// returned.
#ifndef MINIVMM_VMM_RUN_RECENT_EXITS_H_
#define MINIVMM_VMM_RUN_RECENT_EXITS_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <variant>
#include <vector>

#include "minivmm/run_result.h"
#include "minivmm/vcpu_state.h"
#include "vmm/core/vcpu_exit.h"

namespace minivmm {

class RecentExitRing {
 public:
  // `capacity` > 0.
  explicit RecentExitRing(uint32_t capacity) : entries_(capacity), capacity_(capacity) {}

  // The vector about to be injected before the next entry: noted with the
  // exit that entry ends.
  void Injected(uint8_t vector) { injected_ = vector; }

  // The exit KVM_RUN just returned, with the registers it left. A
  // hypercall (the common exit, an `out` of EAX to the hypercall port) is
  // written inline; any other exit by NoteOther.
  [[gnu::always_inline]] void Note(const VcpuExit& exit, const VcpuState& regs, bool hypercall) {
    RecentExit& e = entries_[next_];
    e.sequence = count_++;
    e.hypercall = hypercall;
    e.injected_vector = injected_;
    e.cpl = static_cast<uint8_t>(regs.Cpl());
    e.rip = regs.Get(Reg::kRip);
    e.rflags = regs.Get(Reg::kRflags);
    e.rax = regs.Get(Reg::kRax);
    e.rdi = regs.Get(Reg::kRdi);
    e.rsi = regs.Get(Reg::kRsi);
    if (hypercall) [[likely]] {
      const IoOut* io = std::get_if<IoOut>(&exit);
      e.reason = ExitReason::kIo;
      e.write = true;
      e.size = io->size;
      e.address = io->port;
      e.detail = static_cast<uint32_t>(e.rax);  // what the `out` wrote: EAX
    } else {
      NoteOther(exit, e);
    }
    injected_ = 0;
    if (++next_ == capacity_) next_ = 0;
  }

  // The exits kept, oldest first.
  std::vector<RecentExit> InOrder() const {
    const uint64_t kept = std::min<uint64_t>(count_, entries_.size());
    std::vector<RecentExit> out;
    out.reserve(kept);
    const size_t first = count_ > capacity_ ? next_ : 0;
    for (uint64_t i = 0; i < kept; ++i) out.push_back(entries_[(first + i) % capacity_]);
    return out;
  }

 private:
  [[gnu::noinline]] static void NoteOther(const VcpuExit& exit, RecentExit& e) {
    e.reason = ReasonOf(exit);
    e.write = false;
    e.size = 0;
    e.address = 0;
    e.detail = 0;
    std::visit([&e](const auto& x) { Detail(x, e); }, exit);
  }
  template <typename Span>
  static void Access(uint64_t address, uint8_t size, Span data, bool write, RecentExit& e) {
    e.address = address;
    e.size = size;
    e.write = write;
    if (write) std::memcpy(&e.detail, data.data(), std::min<size_t>(data.size(), 8));
  }
  static void Detail(const IoOut& x, RecentExit& e) { Access(x.port, x.size, x.data, true, e); }
  static void Detail(const IoIn& x, RecentExit& e) { Access(x.port, x.size, x.data, false, e); }
  static void Detail(const MmioWrite& x, RecentExit& e) {
    Access(x.address, static_cast<uint8_t>(x.data.size()), x.data, true, e);
  }
  static void Detail(const MmioRead& x, RecentExit& e) {
    Access(x.address, static_cast<uint8_t>(x.data.size()), x.data, false, e);
  }
  static void Detail(const FailEntry& x, RecentExit& e) { e.detail = x.hardware_reason; }
  static void Detail(const InternalError& x, RecentExit& e) { e.detail = x.suberror; }
  static void Detail(const SystemEvent& x, RecentExit& e) { e.detail = x.type; }
  static void Detail(const HypervExit& x, RecentExit& e) { e.detail = x.type; }
  static void Detail(const IoapicEoi& x, RecentExit& e) { e.detail = x.vector; }
  static void Detail(const UnknownExit& x, RecentExit& e) { e.detail = x.kvm_reason; }
  static void Detail(const RunFailed& x, RecentExit& e) {
    e.detail = static_cast<uint64_t>(x.error);
  }
  template <typename T>
  static void Detail(const T&, RecentExit&) {}  // no detail: hlt, irq window, intr, shutdown

  std::vector<RecentExit> entries_;
  size_t capacity_;
  size_t next_ = 0;
  uint64_t count_ = 0;
  uint8_t injected_ = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_RUN_RECENT_EXITS_H_
