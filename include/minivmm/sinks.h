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

// The guest's one-shot timer (set_timer_op). Guest time is nanoseconds since
// the VM was created, on the host's monotonic clock.
class TimerControl {
 public:
  virtual ~TimerControl() = default;
  virtual uint64_t NowNs() const = 0;
  // Arms a one-shot timer interrupt at `deadline_ns`; 0 cancels it. A
  // deadline in the past fires at once.
  virtual void SetOneShot(uint64_t deadline_ns) = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_SINKS_H_
