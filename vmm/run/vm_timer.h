// The guest's timers and the run's watchdog, on one host thread.
//
// Each vCPU has a periodic timer and a one-shot timer (Xen's periodic and
// singleshot timers). vCPU 0's periodic timer runs at --timer-hz from
// Start(); the guest sets any vCPU's own with vcpu_op(set_periodic_timer) and
// its one-shot with set_timer_op. Each fires `on_interrupt(cpu)` for its own
// vCPU only; `on_timeout` fires once at the run's deadline. The thread starts
// on first use, so a run with no timer and no timeout has none.
#ifndef MINIVMM_VMM_RUN_VM_TIMER_H_
#define MINIVMM_VMM_RUN_VM_TIMER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "minivmm/sinks.h"

namespace minivmm {

class VmTimer final : public TimerControl {
 public:
  using Clock = std::chrono::steady_clock;

  // Timers for `cpus` vCPUs (numbered from 0), none armed. `on_interrupt`
  // is called with the timer's lock held (see CanFire): it must not call
  // back into the timer, and must not block.
  VmTimer(uint32_t cpus, std::function<void(uint32_t cpu)> on_interrupt,
          std::function<void()> on_timeout);
  ~VmTimer() override;

  // Starts counting guest time and arms vCPU 0's periodic timer (0 Hz: none)
  // and the watchdog.
  void Start(uint32_t periodic_hz, std::optional<Clock::duration> timeout);

  uint64_t NowNs() const override;
  // vCPU 0's one-shot.
  bool SetVcpuOneShot(uint32_t vcpu, uint64_t deadline_ns) override;
  bool SetPeriodic(uint32_t vcpu, uint64_t period_ns) override;

  // Stops the thread; nothing fires afterwards. Idempotent.
  void Stop();

  // True while one of vCPU `vcpu`'s timers (periodic or one-shot) can still
  // raise an interrupt. A one-shot is disarmed and its interrupt raised in
  // one step under the lock, so whoever sees false here and then looks at
  // the vCPU's pending interrupts sees the last one the timer raised (the
  // halted-forever rule reads them in that order). False for a vCPU out of
  // range.
  bool CanFire(uint32_t vcpu) const;

 private:
  struct VcpuTimers {
    Clock::duration period{0};
    std::optional<Clock::time_point> next_periodic;
    std::optional<Clock::time_point> one_shot;
  };

  void Loop();
  void EnsureThread();  // mu_ held

  std::function<void(uint32_t)> on_interrupt_;
  std::function<void()> on_timeout_;
  Clock::time_point start_ = Clock::now();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  bool stopping_ = false;
  std::vector<VcpuTimers> vcpus_;  // fixed size: one per vCPU
  std::optional<Clock::time_point> watchdog_;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_RUN_VM_TIMER_H_
