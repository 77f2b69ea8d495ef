// The PC's real-time clock and CMOS RAM (Motorola MC146818A, as QEMU's
// hw/rtc/mc146818rtc.c models it) at ports 0x70/0x71: 128 bytes, of which
// 0x00-0x0D and 0x32 (century) are the clock's and the rest plain RAM.
//
// Offset 0 is the write-only index register: bits 0-6 select a byte, bit 7 is
// the NMI mask, kept (nmi_masked()) but with no effect; it reads 0xFF. Offset 1
// reads and writes the selected byte. Only 1-byte accesses act: any other
// size, a read of the index, or an offset past the device reads 0xFF in every
// byte (or is dropped, for a write) and is counted in ignored_accesses(), as
// are writes to the read-only registers C and D.
//
// The time is the machine's wall time at construction plus the time since on
// an injected monotonic clock, broken down in UTC and kept within the years
// 0000-9999 (the most the century and year bytes can say): it stops at the end
// of 9999. Registers 0-9 (seconds, alarm, minutes, alarm, hours, alarm, day of
// week 1-7 with Sunday = 1, day, month, year 00-99) and 0x32 read in BCD, or
// in binary when register B's DM bit is set; with B's 24/12 bit clear, hours
// read 1-12 with bit 7 for PM.
//  - A (0x0A, default 0x26): bits 0-6 as written. Bit 7, UIP, reads 1 in the
//    last 244 us of each second of the RTC's time when B.SET is clear and the
//    divider (bits 6-4) is 010. The divider and rate bits have no other
//    effect: the time runs whatever they say.
//  - B (0x0B, default 0x02): SET PIE AIE UIE SQWE DM 24/12 DSE, as written,
//    except that setting SET clears UIE (as the MC146818 and QEMU do). SET
//    freezes the time registers at their current values; writes to them are
//    kept, read back, and become the time when SET goes back to 0, decoded in
//    the mode register B had while SET was 1. A time register written while
//    SET is 0 sets the time at once (as on the chip and in QEMU). In both
//    cases the fraction of the current second is kept, so second boundaries
//    stay where they were (QEMU's s->offset). The written day of week is not
//    kept: it reads as the date's. Written values are untrusted: a BCD byte
//    with digits above 9 decodes as QEMU does ((b >> 4) * 10 + (b & 0xF)), any
//    field out of range carries over through timegm() (seconds 70 is the
//    next minute's 10; day 0 the previous month's last), and the result is
//    clamped to the years 0000-9999.
//  - C (0x0C): IRQF PF AF UF in bits 7-4, read-only, cleared by a read. They
//    are computed at the read: UF if a second boundary passed since the last
//    read of C (or construction), AF if one of those boundaries matched the
//    alarm (seconds, minutes and hours bytes each equal to the time's, or a
//    byte >= 0xC0, which matches anything), or RaiseAlarm() was called. No
//    boundary passes while SET is 1. PF is always 0: no periodic interrupt is
//    modelled. IRQF = (AF && AIE) || (PF && PIE) || (UF && UIE), with B as it
//    is at the read. The device raises no IRQ 8 (the machine has no interrupt
//    from the RTC); the flags are only read back.
//  - D (0x0D): reads 0x80 (RAM and time valid).
#ifndef MINIVMM_DEVICES_RTC_CMOS_H_
#define MINIVMM_DEVICES_RTC_CMOS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>

#include "minivmm/io_device.h"

namespace minivmm {

class RtcCmos final : public IoDevice {
 public:
  static constexpr uint64_t kPortBase = 0x70;  // where every PC has it
  static constexpr uint64_t kIndexOffset = 0;
  static constexpr uint64_t kDataOffset = 1;
  static constexpr uint64_t kIoSize = 2;  // register on the bus with this length
  static constexpr size_t kBytes = 128;

  // CMOS byte numbers of the clock.
  static constexpr uint8_t kSeconds = 0x00;
  static constexpr uint8_t kSecondsAlarm = 0x01;
  static constexpr uint8_t kMinutes = 0x02;
  static constexpr uint8_t kMinutesAlarm = 0x03;
  static constexpr uint8_t kHours = 0x04;
  static constexpr uint8_t kHoursAlarm = 0x05;
  static constexpr uint8_t kDayOfWeek = 0x06;
  static constexpr uint8_t kDayOfMonth = 0x07;
  static constexpr uint8_t kMonth = 0x08;
  static constexpr uint8_t kYear = 0x09;
  static constexpr uint8_t kRegA = 0x0A;
  static constexpr uint8_t kRegB = 0x0B;
  static constexpr uint8_t kRegC = 0x0C;
  static constexpr uint8_t kRegD = 0x0D;
  static constexpr uint8_t kCentury = 0x32;

  static constexpr uint8_t kRegAUip = 0x80;
  static constexpr uint8_t kRegBSet = 0x80;
  static constexpr uint8_t kRegBPie = 0x40;
  static constexpr uint8_t kRegBAie = 0x20;
  static constexpr uint8_t kRegBUie = 0x10;
  static constexpr uint8_t kRegBBinary = 0x04;  // DM
  static constexpr uint8_t kRegB24Hour = 0x02;
  static constexpr uint8_t kRegCIrqf = 0x80;
  static constexpr uint8_t kRegCPf = 0x40;
  static constexpr uint8_t kRegCAf = 0x20;
  static constexpr uint8_t kRegCUf = 0x10;

  static constexpr uint64_t kUipWindowNs = 244'000;  // UIP before each second boundary

  // Monotonic nanoseconds; the default is std::chrono::steady_clock, which is
  // CLOCK_MONOTONIC on Linux.
  using Clock = std::function<uint64_t()>;
  static uint64_t MonotonicNs();
  // The host's UTC time now, in seconds since the epoch (time_t).
  static int64_t WallSeconds();

  struct Config {
    int64_t wall_seconds = 0;   // the RTC's time at construction (clamped to 0000-9999)
    Clock clock = MonotonicNs;  // null means MonotonicNs
    // Initial CMOS bytes 0x0E-0x7F (memory sizes etc.); bytes 0x00-0x0D and
    // 0x32 are the clock's and ignored here.
    std::array<uint8_t, kBytes> ram{};
  };

  // Calls config.clock once. Not thread-safe: one vCPU drives it at a time.
  explicit RtcCmos(Config config);

  std::string_view Name() const override { return "rtc"; }

  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

  // The monotonic-clock time (ns) of the first second boundary strictly after
  // now at which the alarm matches, at most 24 hours ahead; nullopt when B.AIE
  // is clear, B.SET is set (the time stands still) or the alarm bytes match no
  // time of day (such as a BCD seconds byte 0x60). Saturates at UINT64_MAX.
  std::optional<uint64_t> NextAlarmNs() const;
  // Sets AF in register C (and so IRQF while AIE is set): the machine calls it
  // when it wakes the guest from S3 on the alarm.
  void RaiseAlarm() { flags_ |= kRegCAf; }

  bool nmi_masked() const { return nmi_masked_; }
  uint8_t index() const { return index_; }
  uint64_t ignored_accesses() const { return ignored_accesses_; }

 private:
  uint8_t ReadByte(uint8_t index);
  void WriteByte(uint8_t index, uint8_t value);

  // The RTC's time (whole seconds since the epoch, clamped) at clock reading `ns`.
  int64_t SecondsAt(uint64_t ns) const;
  // Nanoseconds since the last second boundary at clock reading `ns`.
  uint64_t FractionAt(uint64_t ns) const;
  // Folds the second boundaries passed since the last fold into flags_.
  void UpdateFlags(uint64_t now);
  // The first time after `t` (seconds) whose time of day matches the alarm.
  std::optional<int64_t> NextAlarmAfter(int64_t t) const;
  // Copies the time at `now` into the time bytes, encoded as `reg_b` says.
  void LatchTime(uint64_t now, uint8_t reg_b);
  // Makes the time bytes, encoded as `reg_b` says, the time at `now`.
  void CommitTime(uint64_t now, uint8_t reg_b);

  Clock clock_;
  int64_t base_seconds_;  // the RTC's time at clock reading base_ns_
  uint64_t base_ns_;
  uint64_t flags_checked_ns_;  // flags_ hold the boundaries up to this reading
  uint8_t flags_ = 0;          // PF AF UF of register C; IRQF is derived
  std::array<uint8_t, kBytes> cmos_{};
  uint8_t index_ = 0;
  bool nmi_masked_ = false;
  uint64_t ignored_accesses_ = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_RTC_CMOS_H_
