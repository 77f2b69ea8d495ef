#include "devices/pm_timer.h"

#include <chrono>
#include <cstddef>
#include <utility>

namespace minivmm {

uint64_t PmTimer::MonotonicNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

uint64_t PmTimer::TicksIn(uint64_t elapsed_ns) {
  // At most (2^64 - 1) * 3579545 / 1e9 < 2^64, so the quotient always fits.
  return static_cast<uint64_t>(static_cast<unsigned __int128>(elapsed_ns) * kFrequencyHz /
                               1'000'000'000u);
}

PmTimer::PmTimer(Clock clock) : clock_(std::move(clock)), start_ns_(clock_()) {}

uint32_t PmTimer::Counter() const {
  const uint64_t now = clock_();
  // A clock that steps back (it should not) reads as no time passed.
  const uint64_t elapsed = now >= start_ns_ ? now - start_ns_ : 0;
  return static_cast<uint32_t>(TicksIn(elapsed)) & kCounterMask;
}

void PmTimer::Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) {
  const uint32_t value = Counter();
  for (size_t i = 0; i < data.size(); ++i) {
    // Compared without adding, so that no offset can wrap into the register.
    const bool inside = offset < kIoSize && i < kIoSize - offset;
    data[i] = inside ? static_cast<uint8_t>(value >> (8 * (offset + i))) : 0;
  }
}

void PmTimer::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) {
  ++ignored_writes_;
}

}  // namespace minivmm
