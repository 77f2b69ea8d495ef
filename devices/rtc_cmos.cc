#include "devices/rtc_cmos.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <utility>

namespace minivmm {
namespace {

constexpr uint64_t kNsPerSecond = 1'000'000'000;
constexpr int64_t kSecondsPerDay = 86'400;
// 0000-01-01 00:00:00 and 9999-12-31 23:59:59 UTC (proleptic Gregorian): the
// range the year and century bytes can hold, well inside what gmtime_r and
// timegm handle with a 64-bit time_t.
constexpr int64_t kMinSeconds = -62'167'219'200;
constexpr int64_t kMaxSeconds = 253'402'300'799;

constexpr uint8_t kTimeBytes[] = {RtcCmos::kSeconds,   RtcCmos::kMinutes,    RtcCmos::kHours,
                                  RtcCmos::kDayOfWeek, RtcCmos::kDayOfMonth, RtcCmos::kMonth,
                                  RtcCmos::kYear,      RtcCmos::kCentury};

bool IsTimeByte(uint8_t index) {
  return std::find(std::begin(kTimeBytes), std::end(kTimeBytes), index) != std::end(kTimeBytes);
}

bool Binary(uint8_t reg_b) { return (reg_b & RtcCmos::kRegBBinary) != 0; }

// `value` (0-99) as register B's DM bit says.
uint8_t Encode(int value, uint8_t reg_b) {
  return static_cast<uint8_t>(Binary(reg_b) ? value : (value / 10) << 4 | value % 10);
}

// A guest byte as a number: 0-255 in binary; in BCD, digits above 9 count as
// they are (0xA5 is 105), as QEMU's rtc_from_bcd has it.
int Decode(uint8_t byte, uint8_t reg_b) {
  return Binary(reg_b) ? byte : (byte >> 4) * 10 + (byte & 0x0F);
}

// Hour 0-23 as the hours byte shows it: 1-12 with bit 7 for PM in 12-hour mode.
uint8_t EncodeHour(int hour, uint8_t reg_b) {
  if ((reg_b & RtcCmos::kRegB24Hour) != 0) return Encode(hour, reg_b);
  const int twelve = hour % 12 == 0 ? 12 : hour % 12;
  return static_cast<uint8_t>(Encode(twelve, reg_b) | (hour >= 12 ? 0x80 : 0));
}

// The inverse, for any byte; bit 7 is masked off in 24-hour mode, as in QEMU.
int DecodeHour(uint8_t byte, uint8_t reg_b) {
  const int hour = Decode(byte & 0x7F, reg_b);
  if ((reg_b & RtcCmos::kRegB24Hour) != 0) return hour;
  return hour % 12 + ((byte & 0x80) != 0 ? 12 : 0);
}

bool AlarmMatches(uint8_t alarm, uint8_t value) { return alarm >= 0xC0 || alarm == value; }

std::tm BreakDown(int64_t seconds) {
  const std::time_t t = seconds;
  std::tm tm{};
  // Cannot fail for the clamped range; should it, the time reads as the epoch.
  if (gmtime_r(&t, &tm) == nullptr) {
    tm = std::tm{};
    tm.tm_mday = 1;
    tm.tm_year = 70;
    tm.tm_wday = 4;
  }
  return tm;
}

uint8_t TimeByte(uint8_t index, const std::tm& tm, uint8_t reg_b) {
  const int year = tm.tm_year + 1900;  // 0-9999 in the clamped range
  switch (index) {
    case RtcCmos::kSeconds:
      return Encode(tm.tm_sec, reg_b);
    case RtcCmos::kMinutes:
      return Encode(tm.tm_min, reg_b);
    case RtcCmos::kHours:
      return EncodeHour(tm.tm_hour, reg_b);
    case RtcCmos::kDayOfWeek:
      return Encode(tm.tm_wday + 1, reg_b);
    case RtcCmos::kDayOfMonth:
      return Encode(tm.tm_mday, reg_b);
    case RtcCmos::kMonth:
      return Encode(tm.tm_mon + 1, reg_b);
    case RtcCmos::kYear:
      return Encode(year % 100, reg_b);
    default:
      return Encode(year / 100, reg_b);  // kCentury
  }
}

}  // namespace

uint64_t RtcCmos::MonotonicNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

int64_t RtcCmos::WallSeconds() {
  return static_cast<int64_t>(
      std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()));
}

RtcCmos::RtcCmos(Config config)
    : clock_(config.clock ? std::move(config.clock) : Clock(MonotonicNs)),
      base_seconds_(std::clamp(config.wall_seconds, kMinSeconds, kMaxSeconds)),
      base_ns_(clock_()),
      flags_checked_ns_(base_ns_) {
  for (size_t i = kRegD + 1; i < kBytes; ++i) {
    if (i != kCentury) cmos_[i] = config.ram[i];
  }
  cmos_[kRegA] = 0x26;  // 32.768 kHz divider, 1024 Hz rate
  cmos_[kRegB] = kRegB24Hour;
}

int64_t RtcCmos::SecondsAt(uint64_t ns) const {
  // A clock that steps back (it should not) reads as no time passed.
  const uint64_t elapsed = ns > base_ns_ ? ns - base_ns_ : 0;
  // At most ~2.6e11 + 1.8e10: no overflow.
  return std::min(base_seconds_ + static_cast<int64_t>(elapsed / kNsPerSecond), kMaxSeconds);
}

uint64_t RtcCmos::FractionAt(uint64_t ns) const {
  return ns > base_ns_ ? (ns - base_ns_) % kNsPerSecond : 0;
}

void RtcCmos::UpdateFlags(uint64_t now) {
  if ((cmos_[kRegB] & kRegBSet) == 0) {
    const int64_t from = SecondsAt(flags_checked_ns_);
    const int64_t to = SecondsAt(now);
    if (to > from) {
      flags_ |= kRegCUf;
      const std::optional<int64_t> alarm = NextAlarmAfter(from);
      if (alarm && *alarm <= to) flags_ |= kRegCAf;
    }
  }
  flags_checked_ns_ = now;
}

std::optional<int64_t> RtcCmos::NextAlarmAfter(int64_t t) const {
  const uint8_t reg_b = cmos_[kRegB];
  std::array<bool, 24> hours{};
  std::array<bool, 60> minutes{};
  std::array<bool, 60> seconds{};
  for (int i = 0; i < 60; ++i) {
    if (i < 24) hours[i] = AlarmMatches(cmos_[kHoursAlarm], EncodeHour(i, reg_b));
    minutes[i] = AlarmMatches(cmos_[kMinutesAlarm], Encode(i, reg_b));
    seconds[i] = AlarmMatches(cmos_[kSecondsAlarm], Encode(i, reg_b));
  }
  const auto none = [](const auto& set) {
    return std::find(set.begin(), set.end(), true) == set.end();
  };
  if (none(hours) || none(minutes) || none(seconds)) return std::nullopt;
  // The alarm looks only at the time of day, so it matches today after `t` or
  // tomorrow. Hours and minutes wholly at or before `t` are skipped, so this
  // takes at most ~2 * (24 + 60 + 60) steps.
  int64_t today = t / kSecondsPerDay * kSecondsPerDay;
  if (today > t) today -= kSecondsPerDay;  // floor for times before 1970
  for (int64_t day = today; day <= today + kSecondsPerDay; day += kSecondsPerDay) {
    for (int hour = 0; hour < 24; ++hour) {
      const int64_t hour_start = day + hour * 3600;
      if (!hours[hour] || hour_start + 3599 <= t) continue;
      for (int minute = 0; minute < 60; ++minute) {
        const int64_t minute_start = hour_start + minute * 60;
        if (!minutes[minute] || minute_start + 59 <= t) continue;
        for (int second = 0; second < 60; ++second) {
          if (seconds[second] && minute_start + second > t) return minute_start + second;
        }
      }
    }
  }
  return std::nullopt;  // not reached: every set is non-empty
}

std::optional<uint64_t> RtcCmos::NextAlarmNs() const {
  const uint8_t reg_b = cmos_[kRegB];
  if ((reg_b & kRegBAie) == 0 || (reg_b & kRegBSet) != 0) return std::nullopt;
  const uint64_t now = clock_();
  const int64_t t = SecondsAt(now);
  const std::optional<int64_t> alarm = NextAlarmAfter(t);
  if (!alarm || *alarm - t > kSecondsPerDay || *alarm > kMaxSeconds) return std::nullopt;
  // t is below kMaxSeconds here, so it is base_seconds_ plus the whole seconds elapsed.
  const uint64_t elapsed = now > base_ns_ ? now - base_ns_ : 0;
  const unsigned __int128 at =
      base_ns_ +
      static_cast<unsigned __int128>(elapsed / kNsPerSecond + static_cast<uint64_t>(*alarm - t)) *
          kNsPerSecond;
  return at > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(at);
}

void RtcCmos::LatchTime(uint64_t now, uint8_t reg_b) {
  const std::tm tm = BreakDown(SecondsAt(now));
  for (uint8_t index : kTimeBytes) cmos_[index] = TimeByte(index, tm, reg_b);
}

void RtcCmos::CommitTime(uint64_t now, uint8_t reg_b) {
  // Each field is at most 165 (BCD 0xFF) and the year at most 16665, so
  // timegm's normalization cannot overflow; the day of week is not an input.
  std::tm tm{};
  tm.tm_sec = Decode(cmos_[kSeconds], reg_b);
  tm.tm_min = Decode(cmos_[kMinutes], reg_b);
  tm.tm_hour = DecodeHour(cmos_[kHours], reg_b);
  tm.tm_mday = Decode(cmos_[kDayOfMonth], reg_b);
  tm.tm_mon = Decode(cmos_[kMonth], reg_b) - 1;
  tm.tm_year = Decode(cmos_[kCentury], reg_b) * 100 + Decode(cmos_[kYear], reg_b) - 1900;
  const int64_t seconds = static_cast<int64_t>(timegm(&tm));
  // Keep the fraction of the current second: boundaries stay in place.
  base_ns_ = now - FractionAt(now);
  base_seconds_ = std::clamp(seconds, kMinSeconds, kMaxSeconds);
  flags_checked_ns_ = now;
}

uint8_t RtcCmos::ReadByte(uint8_t index) {
  const uint8_t reg_b = cmos_[kRegB];
  if (IsTimeByte(index)) {
    if ((reg_b & kRegBSet) != 0) return cmos_[index];
    return TimeByte(index, BreakDown(SecondsAt(clock_())), reg_b);
  }
  switch (index) {
    case kRegA: {
      const bool uip = (reg_b & kRegBSet) == 0 && (cmos_[kRegA] & 0x70) == 0x20 &&
                       FractionAt(clock_()) >= kNsPerSecond - kUipWindowNs;
      return static_cast<uint8_t>(cmos_[kRegA] | (uip ? kRegAUip : 0));
    }
    case kRegC: {
      UpdateFlags(clock_());
      const bool irq = ((flags_ & kRegCAf) != 0 && (reg_b & kRegBAie) != 0) ||
                       ((flags_ & kRegCPf) != 0 && (reg_b & kRegBPie) != 0) ||
                       ((flags_ & kRegCUf) != 0 && (reg_b & kRegBUie) != 0);
      const uint8_t value = static_cast<uint8_t>(flags_ | (irq ? kRegCIrqf : 0));
      flags_ = 0;
      return value;
    }
    case kRegD:
      return 0x80;
    default:
      return cmos_[index];
  }
}

void RtcCmos::WriteByte(uint8_t index, uint8_t value) {
  const uint8_t reg_b = cmos_[kRegB];
  if (IsTimeByte(index)) {
    if ((reg_b & kRegBSet) != 0) {
      cmos_[index] = value;
      return;
    }
    const uint64_t now = clock_();
    UpdateFlags(now);  // the boundaries so far, before the time jumps
    LatchTime(now, reg_b);
    cmos_[index] = value;
    CommitTime(now, reg_b);
    return;
  }
  switch (index) {
    case kRegA:
      cmos_[kRegA] = value & static_cast<uint8_t>(~kRegAUip);
      return;
    case kRegB: {
      const uint64_t now = clock_();
      UpdateFlags(now);
      const bool was_set = (reg_b & kRegBSet) != 0;
      const bool set = (value & kRegBSet) != 0;
      if (!was_set && set) {
        value &= static_cast<uint8_t>(~kRegBUie);
        LatchTime(now, value);  // read back in the new mode while SET
      } else if (was_set && !set) {
        CommitTime(now, reg_b);  // written in the mode SET was set with
      }
      cmos_[kRegB] = value;
      return;
    }
    case kRegC:
    case kRegD:
      ++ignored_accesses_;
      return;
    case kSecondsAlarm:
    case kMinutesAlarm:
    case kHoursAlarm:
      UpdateFlags(clock_());  // the boundaries so far, against the old alarm
      cmos_[index] = value;
      return;
    default:
      cmos_[index] = value;
  }
}

void RtcCmos::Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) {
  std::fill(data.begin(), data.end(), uint8_t{0xFF});
  if (data.size() != 1 || offset != kDataOffset) {
    ++ignored_accesses_;
    return;
  }
  data[0] = ReadByte(index_);
}

void RtcCmos::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) {
  if (data.size() != 1 || offset >= kIoSize) {
    ++ignored_accesses_;
    return;
  }
  if (offset == kIndexOffset) {
    index_ = data[0] & 0x7F;
    nmi_masked_ = (data[0] & 0x80) != 0;
    return;
  }
  WriteByte(index_, data[0]);
}

}  // namespace minivmm
