// The guest timer and the run's watchdog, on one host thread.
//
// Fires `on_interrupt` at the periodic rate (--timer-hz) and at the one-shot
// deadline of set_timer_op, and `on_timeout` once at the run's deadline. The
// thread starts on first use, so a run with no timer and no timeout has none.
#ifndef MINIVMM_VMM_RUN_VM_TIMER_H_
#define MINIVMM_VMM_RUN_VM_TIMER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "minivmm/sinks.h"

namespace minivmm {

class VmTimer final : public TimerControl {
 public:
  using Clock = std::chrono::steady_clock;

  VmTimer(std::function<void()> on_interrupt, std::function<void()> on_timeout);
  ~VmTimer() override;

  // Starts counting guest time and arms the periodic timer and the watchdog.
  void Start(uint32_t periodic_hz, std::optional<Clock::duration> timeout);

  uint64_t NowNs() const override;
  void SetOneShot(uint64_t deadline_ns) override;

  // Stops the thread; nothing fires afterwards. Idempotent.
  void Stop();

  // True while something (periodic or one-shot) can still raise an interrupt,
  // and while one that fired is being raised: it turns false only after
  // on_interrupt has returned, so whoever sees false next sees the interrupt.
  bool CanFire() const;

 private:
  void Loop();
  void EnsureThread();  // mu_ held

  std::function<void()> on_interrupt_;
  std::function<void()> on_timeout_;
  Clock::time_point start_ = Clock::now();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  bool stopping_ = false;
  Clock::duration period_{0};
  std::optional<Clock::time_point> next_periodic_;
  std::optional<Clock::time_point> one_shot_;
  // Interrupts taken off the timers and not yet raised by on_interrupt.
  uint32_t firing_ = 0;
  std::optional<Clock::time_point> watchdog_;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_RUN_VM_TIMER_H_
