#include "vmm/run/vm_timer.h"

#include <algorithm>

namespace minivmm {

VmTimer::VmTimer(std::function<void()> on_interrupt, std::function<void()> on_timeout)
    : on_interrupt_(std::move(on_interrupt)), on_timeout_(std::move(on_timeout)) {}

VmTimer::~VmTimer() { Stop(); }

void VmTimer::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void VmTimer::Start(uint32_t periodic_hz, std::optional<Clock::duration> timeout) {
  std::lock_guard lock(mu_);
  start_ = Clock::now();
  if (periodic_hz > 0) {
    period_ = std::chrono::nanoseconds(1'000'000'000 / periodic_hz);
    next_periodic_ = start_ + period_;
  }
  if (timeout) watchdog_ = start_ + *timeout;
  if (next_periodic_ || watchdog_) EnsureThread();
  cv_.notify_all();
}

uint64_t VmTimer::NowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
}

void VmTimer::SetOneShot(uint64_t deadline_ns) {
  std::lock_guard lock(mu_);
  if (deadline_ns == 0) {
    one_shot_.reset();
  } else {
    // Clamp so that a huge guest deadline cannot overflow the time point.
    uint64_t capped = std::min<uint64_t>(deadline_ns, uint64_t{1} << 62);
    one_shot_ = start_ + std::chrono::nanoseconds(capped);
    EnsureThread();
  }
  cv_.notify_all();
}

bool VmTimer::CanFire() const {
  std::lock_guard lock(mu_);
  return next_periodic_.has_value() || one_shot_.has_value() || firing_ > 0;
}

void VmTimer::EnsureThread() {
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
}

void VmTimer::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    std::optional<Clock::time_point> next;
    for (const auto& t : {next_periodic_, one_shot_, watchdog_}) {
      if (t && (!next || *t < *next)) next = t;
    }
    if (!next) {
      cv_.wait(lock);
      continue;
    }
    if (cv_.wait_until(lock, *next) != std::cv_status::timeout && Clock::now() < *next) continue;
    Clock::time_point now = Clock::now();
    bool fire = false, timeout = false;
    if (next_periodic_ && *next_periodic_ <= now) {
      fire = true;
      // Skip missed periods rather than bursting: a timer tick is a level,
      // not a count, for this guest.
      while (*next_periodic_ <= now) *next_periodic_ += period_;
    }
    if (one_shot_ && *one_shot_ <= now) {
      fire = true;
      one_shot_.reset();
    }
    if (watchdog_ && *watchdog_ <= now) {
      timeout = true;
      watchdog_.reset();
    }
    // The one-shot is already disarmed: count the interrupt as still to come
    // until it is raised, or CanFire() would say nothing can fire while the
    // lock is released.
    if (fire) ++firing_;
    lock.unlock();
    if (fire) on_interrupt_();
    if (timeout) on_timeout_();
    lock.lock();
    if (fire) --firing_;
  }
}

}  // namespace minivmm
