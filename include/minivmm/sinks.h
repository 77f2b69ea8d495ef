// Where guest output goes. The library prints nothing by itself: the
// embedding program (or the CLI) hands it sinks.
#ifndef MINIVMM_SINKS_H_
#define MINIVMM_SINKS_H_

#include <cstdint>
#include <string_view>

namespace minivmm {

// Guest console bytes (UART and console_io), in order. Called on the vCPU
// thread; must not block for long.
class ConsoleSink {
 public:
  virtual ~ConsoleSink() = default;
  virtual void Write(std::string_view bytes) = 0;
};

// The guest's timers: set_timer_op arms the calling vCPU's one-shot timer,
// vcpu_op(set_periodic_timer / stop_periodic_timer) sets or stops its
// periodic timer; each interrupts that vCPU only. Guest time is nanoseconds
// since the VM was created, on the host's monotonic clock.
class TimerControl {
 public:
  virtual ~TimerControl() = default;
  virtual uint64_t NowNs() const = 0;
  // Arms vCPU `vcpu`'s own one-shot timer interrupt at `deadline_ns`; 0
  // cancels it. A deadline in the past fires at once. False, nothing
  // changed, when this timer has none for that vCPU.
  virtual bool SetVcpuOneShot(uint32_t vcpu, uint64_t deadline_ns) = 0;
  // Makes vCPU `vcpu`'s periodic timer interrupt it every `period_ns` from
  // now on, replacing its previous period; 0 stops it. The caller has
  // checked the period (the VM's hypercall accepts 1 ms to 1 hour). False,
  // nothing changed, when this timer has no periodic timer for that vCPU.
  virtual bool SetPeriodic(uint32_t vcpu, uint64_t period_ns) = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_SINKS_H_
