// The ACPI power-management timer (ACPI 6.5, 4.8.3.3): one read-only 32-bit
// port whose value counts at 3.579545 MHz. The machine chooses the port (ICH9
// puts it at PMBASE + 8, 0x608 with QEMU's PMBASE 0x600; PIIX4 at 0xb008); the
// device sees only offsets from it.
//
// The count is the time since construction on an injected clock, in ticks of
// the PM timer (rounded down), modulo 2^24: the timer is 24 bits wide, so the
// FADT describing it must say TMR_VAL_EXT = 0, and bits 24-31 read 0. A read
// returns the value's bytes from the access's offset on, little-endian (a
// 1-byte read at offset 0 is the low byte, a 2-byte read the low 16 bits), and
// 0 for bytes past the register. Writes are ignored and counted.
#ifndef MINIVMM_DEVICES_PM_TIMER_H_
#define MINIVMM_DEVICES_PM_TIMER_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "minivmm/io_device.h"

namespace minivmm {

class PmTimer final : public IoDevice {
 public:
  static constexpr uint64_t kIoSize = 4;  // register on the bus with this length
  static constexpr uint64_t kFrequencyHz = 3'579'545;
  static constexpr uint32_t kCounterMask = (1u << 24) - 1;

  // Monotonic nanoseconds; the default is std::chrono::steady_clock, which is
  // CLOCK_MONOTONIC on Linux.
  using Clock = std::function<uint64_t()>;
  static uint64_t MonotonicNs();

  // Ticks of the PM timer in `elapsed_ns`, rounded down, not masked; exact for
  // every uint64_t (the product is computed in 128 bits).
  static uint64_t TicksIn(uint64_t elapsed_ns);

  // The counter reads 0 at construction, when `clock` is called once. Not
  // thread-safe: one vCPU drives it at a time.
  explicit PmTimer(Clock clock = MonotonicNs);

  std::string_view Name() const override { return "pm-timer"; }

  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

  // The register's value now: TicksIn(elapsed) & kCounterMask.
  uint32_t Counter() const;
  uint64_t ignored_writes() const { return ignored_writes_; }

 private:
  Clock clock_;
  uint64_t start_ns_;
  uint64_t ignored_writes_ = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_PM_TIMER_H_
