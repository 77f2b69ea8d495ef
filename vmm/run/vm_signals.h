// Cross-thread signals to a vCPU thread: a pending timer interrupt, a stop
// request, the run's timeout. Set from the timer thread, a signal handler
// (stop only: atomics, no lock) or the embedding program; read by the run
// loop before every entry. Block() sleeps until one of them is raised.
#ifndef MINIVMM_VMM_RUN_VM_SIGNALS_H_
#define MINIVMM_VMM_RUN_VM_SIGNALS_H_

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "vmm/core/vcpu.h"

namespace minivmm {

struct VmSignals {
  std::atomic<bool> irq_pending{false};
  std::atomic<bool> stop_requested{false};
  std::atomic<bool> timed_out{false};
  std::atomic<Vcpu*> vcpu{nullptr};  // kicked out of the guest on every signal
  std::mutex mu;
  std::condition_variable cv;

  bool AnyWake() const {
    return irq_pending.load(std::memory_order_acquire) ||
           stop_requested.load(std::memory_order_acquire) ||
           timed_out.load(std::memory_order_acquire);
  }
  // Wakes a blocked vCPU and kicks a running one. Not async-signal-safe.
  void Wake() {
    { std::lock_guard lock(mu); }
    cv.notify_all();
    if (Vcpu* v = vcpu.load(std::memory_order_acquire)) v->Kick();
  }
  void RaiseInterrupt() {
    irq_pending.store(true, std::memory_order_release);
    Wake();
  }
  void TimeOut() {
    timed_out.store(true, std::memory_order_release);
    Wake();
  }
  // Async-signal-safe: no lock; the kick forces an exit, after which the run
  // loop sees the flag (a blocked vCPU re-checks it at least every 50 ms).
  void RequestStop() {
    stop_requested.store(true, std::memory_order_release);
    if (Vcpu* v = vcpu.load(std::memory_order_acquire)) v->Kick();
  }
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_RUN_VM_SIGNALS_H_
