// Cross-thread signals to one vCPU thread: a pending timer interrupt, a
// pending IPI, a stop request, the run's timeout, another vCPU's stop of the
// VM. Set from the
// timer thread, a signal handler (stop only: a lock-free atomic, no lock),
// the embedding program or another vCPU thread; the run loop reads them with
// one load before every entry. Block() sleeps until one of them is raised.
// One per vCPU: a VM-wide stop is raised in each.
#ifndef MINIVMM_VMM_RUN_VM_SIGNALS_H_
#define MINIVMM_VMM_RUN_VM_SIGNALS_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "vmm/core/vcpu.h"

namespace minivmm {

struct VmSignals {
  // Bits of `raised`.
  static constexpr uint32_t kInterrupt = 1;  // the timer has an interrupt to deliver
  static constexpr uint32_t kStop = 2;       // RequestStop()
  static constexpr uint32_t kTimeout = 4;    // the run's time limit elapsed
  static constexpr uint32_t kVmStopped = 8;  // another vCPU stopped the VM
  static constexpr uint32_t kIpi = 16;       // send_ipi or flush_tlb_others: MVMM_IPI_VECTOR
  static constexpr uint32_t kAnyStop = kStop | kTimeout | kVmStopped;
  static constexpr uint32_t kAnyInterrupt = kInterrupt | kIpi;

  std::atomic<uint32_t> raised{0};
  // A lock_kick pending for the next lock_wait (not an interrupt: never
  // injected, so kept out of `raised` and the loop's one load per entry).
  std::atomic<bool> lock_kicked{false};
  std::atomic<Vcpu*> vcpu{nullptr};  // kicked out of the guest on every signal
  std::mutex mu;
  std::condition_variable cv;

  static_assert(std::atomic<uint32_t>::is_always_lock_free);

  uint32_t Raised() const { return raised.load(std::memory_order_acquire); }
  void Clear(uint32_t bits) { raised.fetch_and(~bits, std::memory_order_acq_rel); }

  // Wakes a blocked vCPU and kicks a running one. Not async-signal-safe.
  void Wake() {
    WakeSleeper();
    if (Vcpu* v = vcpu.load(std::memory_order_acquire)) v->Kick();
  }
  // Wakes a vCPU asleep in Block() only; a running one is left in the guest.
  void WakeSleeper() {
    { std::lock_guard lock(mu); }
    cv.notify_all();
  }
  void RaiseInterrupt() {
    raised.fetch_or(kInterrupt, std::memory_order_acq_rel);
    Wake();
  }
  // An IPI: one already pending merges with it (the bit is a level, like an
  // APIC's IRR bit). Wakes a blocked vCPU; `kick` also forces a running one
  // out of the guest (its next entry then takes an `intr` exit).
  void RaiseIpi(bool kick) {
    raised.fetch_or(kIpi, std::memory_order_acq_rel);
    if (kick) {
      Wake();
    } else {
      WakeSleeper();
    }
  }
  // lock_kick: pending until a lock_wait consumes it; wakes a vCPU asleep in
  // lock_wait and nothing else (a running one sees it at its next lock_wait).
  void RaiseLockKick() {
    lock_kicked.store(true, std::memory_order_release);
    WakeSleeper();
  }
  bool TakeLockKick() { return lock_kicked.exchange(false, std::memory_order_acq_rel); }
  void TimeOut() {
    raised.fetch_or(kTimeout, std::memory_order_acq_rel);
    Wake();
  }
  void VmStopped() {
    raised.fetch_or(kVmStopped, std::memory_order_acq_rel);
    Wake();
  }
  // Async-signal-safe: no lock; the kick forces an exit, after which the run
  // loop sees the bit (a blocked vCPU re-checks it at least every 50 ms).
  void RequestStop() {
    raised.fetch_or(kStop, std::memory_order_acq_rel);
    if (Vcpu* v = vcpu.load(std::memory_order_acquire)) v->Kick();
  }
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_RUN_VM_SIGNALS_H_
