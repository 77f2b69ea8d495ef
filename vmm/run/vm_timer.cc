#include "vmm/run/vm_timer.h"

#include <algorithm>

namespace minivmm {
namespace {

// Caps a guest-chosen duration so that a time point after it cannot overflow.
std::chrono::nanoseconds Capped(uint64_t ns) {
  return std::chrono::nanoseconds(std::min<uint64_t>(ns, uint64_t{1} << 62));
}

}  // namespace

VmTimer::VmTimer(uint32_t cpus, std::function<void(uint32_t)> on_interrupt,
                 std::function<void()> on_timeout)
    : on_interrupt_(std::move(on_interrupt)), on_timeout_(std::move(on_timeout)), vcpus_(cpus) {}

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
  if (periodic_hz > 0 && !vcpus_.empty()) {
    VcpuTimers& boot = vcpus_[0];
    boot.period = std::chrono::nanoseconds(1'000'000'000 / periodic_hz);
    boot.next_periodic = start_ + boot.period;
    EnsureThread();
  }
  if (timeout) {
    watchdog_ = start_ + *timeout;
    EnsureThread();
  }
  cv_.notify_all();
}

uint64_t VmTimer::NowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
}

bool VmTimer::SetVcpuOneShot(uint32_t vcpu, uint64_t deadline_ns) {
  std::lock_guard lock(mu_);
  if (vcpu >= vcpus_.size()) return false;
  if (deadline_ns == 0) {
    vcpus_[vcpu].one_shot.reset();
  } else {
    vcpus_[vcpu].one_shot = start_ + Capped(deadline_ns);
    EnsureThread();
  }
  cv_.notify_all();
  return true;
}

bool VmTimer::SetPeriodic(uint32_t vcpu, uint64_t period_ns) {
  std::lock_guard lock(mu_);
  if (vcpu >= vcpus_.size()) return false;
  VcpuTimers& t = vcpus_[vcpu];
  if (period_ns == 0) {
    t.period = Clock::duration{0};
    t.next_periodic.reset();
  } else {
    t.period = Capped(period_ns);
    t.next_periodic = Clock::now() + t.period;
    EnsureThread();
  }
  cv_.notify_all();
  return true;
}

bool VmTimer::CanFire(uint32_t vcpu) const {
  std::lock_guard lock(mu_);
  if (vcpu >= vcpus_.size()) return false;
  const VcpuTimers& t = vcpus_[vcpu];
  return t.next_periodic.has_value() || t.one_shot.has_value();
}

void VmTimer::EnsureThread() {
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
}

void VmTimer::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    std::optional<Clock::time_point> next = watchdog_;
    for (const VcpuTimers& v : vcpus_) {
      for (const auto& t : {v.next_periodic, v.one_shot}) {
        if (t && (!next || *t < *next)) next = t;
      }
    }
    if (!next) {
      cv_.wait(lock);
      continue;
    }
    if (cv_.wait_until(lock, *next) != std::cv_status::timeout && Clock::now() < *next) continue;
    const Clock::time_point now = Clock::now();
    for (uint32_t cpu = 0; cpu < vcpus_.size(); ++cpu) {
      VcpuTimers& v = vcpus_[cpu];
      bool fire = false;
      if (v.next_periodic && *v.next_periodic <= now) {
        fire = true;
        // Skip missed periods rather than bursting: a timer tick is a level,
        // not a count, for this guest.
        while (*v.next_periodic <= now) *v.next_periodic += v.period;
      }
      if (v.one_shot && *v.one_shot <= now) {
        fire = true;
        v.one_shot.reset();
      }
      // Raised under the lock, in the same step as a one-shot is disarmed:
      // whoever sees CanFire() false after this sees the interrupt pending,
      // and nobody sees a timer that can fire once its last interrupt is out.
      if (fire) on_interrupt_(cpu);
    }
    bool timeout = false;
    if (watchdog_ && *watchdog_ <= now) {
      timeout = true;
      watchdog_.reset();
    }
    if (timeout) {
      lock.unlock();
      on_timeout_();
      lock.lock();
    }
  }
}

}  // namespace minivmm
