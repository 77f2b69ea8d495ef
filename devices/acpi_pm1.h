// ACPI's PM1 event and control registers (ACPI 6.5, 4.8.3.1 and 4.8.3.2) as
// the PC machine has them, at PIIX4's places on QEMU's `pc` (PMBASE 0xb000):
// the event block, PM1_STS at offset 0 and PM1_EN at 2, and the control
// block, PM1_CNT. Two devices over one state, so that the exit tables say
// which block the guest used; the machine decides what a sleep does
// (AcpiSleeper) and tells the events block of a wake.
//
// Semantics, per byte (a wider access acts on each of its bytes):
//  - PM1_STS (offsets 0-1): TMR_STS (0), BM_STS (4), GBL_STS (5),
//    PWRBTN_STS (8), SLPBTN_STS (9), RTC_STS (10), WAK_STS (15) read as set;
//    writing a 1 clears a bit, a 0 leaves it. Only RTC_STS and WAK_STS are
//    ever set here (by Wake): the machine has no PM-timer overflow
//    interrupt, bus master, global lock, buttons or SCI.
//  - PM1_EN (offsets 2-3): the enable bits of the same events but WAK_STS,
//    read and written; other bits read 0.
//  - PM1_CNT (offsets 0-1 of the control block): SCI_EN (0) always reads 1
//    (the FADT has no SMI command port: ACPI is always on); BM_RLD (1) and
//    SLP_TYP (10-12) read and written; GBL_RLS (2) and SLP_EN (13) write
//    only, reading 0. A write that sets SLP_EN (the high byte, alone or in
//    a 2-byte write, which then takes SLP_TYP first) asks the sleeper for
//    sleeping state SLP_TYP.
// Bytes past a block's end (which the bus never passes) read 0 and are not
// written. Not thread-safe: one vCPU at a time (the run loop's lock).
#ifndef MINIVMM_DEVICES_ACPI_PM1_H_
#define MINIVMM_DEVICES_ACPI_PM1_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "minivmm/io_device.h"

namespace minivmm {

// What a PM1_CNT write with SLP_EN asks for: sleeping state `slp_typ` (the
// DSDT's \_Sx values), on the vCPU whose exit `ctx` is.
class AcpiSleeper {
 public:
  virtual ~AcpiSleeper() = default;
  virtual void Sleep(uint8_t slp_typ, ExitContext& ctx) = 0;
};

struct AcpiPm1State {
  uint16_t status = 0;
  uint16_t enable = 0;
  uint16_t control = 0;  // BM_RLD and SLP_TYP; SCI_EN is added on read
};

inline constexpr uint16_t kPm1TmrSts = 1u << 0;
inline constexpr uint16_t kPm1BmSts = 1u << 4;
inline constexpr uint16_t kPm1GblSts = 1u << 5;
inline constexpr uint16_t kPm1PwrbtnSts = 1u << 8;
inline constexpr uint16_t kPm1SlpbtnSts = 1u << 9;
inline constexpr uint16_t kPm1RtcSts = 1u << 10;
inline constexpr uint16_t kPm1WakSts = 1u << 15;
inline constexpr uint16_t kPm1StatusBits =
    kPm1TmrSts | kPm1BmSts | kPm1GblSts | kPm1PwrbtnSts | kPm1SlpbtnSts | kPm1RtcSts | kPm1WakSts;
// PM1_EN: TMR_EN, GBL_EN, PWRBTN_EN, SLPBTN_EN, RTC_EN at their events' bits.
inline constexpr uint16_t kPm1RtcEn = kPm1RtcSts;
inline constexpr uint16_t kPm1EnableBits =
    kPm1TmrSts | kPm1GblSts | kPm1PwrbtnSts | kPm1SlpbtnSts | kPm1RtcEn;
inline constexpr uint16_t kPm1SciEn = 1u << 0;
inline constexpr uint16_t kPm1BmRld = 1u << 1;
inline constexpr uint16_t kPm1SlpTypShift = 10;
inline constexpr uint16_t kPm1SlpTyp = 7u << kPm1SlpTypShift;
inline constexpr uint16_t kPm1SlpEn = 1u << 13;

// The event block: PM1_STS and PM1_EN.
class AcpiPm1Events final : public IoDevice {
 public:
  static constexpr uint64_t kIoSize = 4;  // register on the port bus with this length
  explicit AcpiPm1Events(AcpiPm1State* state) : state_(state) {}

  std::string_view Name() const override { return "acpi-pm1-evt"; }
  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

 private:
  AcpiPm1State* state_;
};

// The control block: PM1_CNT.
class AcpiPm1Control final : public IoDevice {
 public:
  static constexpr uint64_t kIoSize = 2;
  AcpiPm1Control(AcpiPm1State* state, AcpiSleeper* sleeper) : state_(state), sleeper_(sleeper) {}

  std::string_view Name() const override { return "acpi-pm1-cnt"; }
  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

  uint64_t sleeps() const { return sleeps_; }

 private:
  AcpiPm1State* state_;
  AcpiSleeper* sleeper_;
  uint64_t sleeps_ = 0;
};

// Both blocks over one state, for a machine to own.
struct AcpiPm1 {
  explicit AcpiPm1(AcpiSleeper* sleeper) : control(&state, sleeper) {}
  // The machine woke from a sleeping state: WAK_STS, and RTC_STS when the
  // RTC's alarm woke it.
  void Wake(bool by_rtc) { state.status |= kPm1WakSts | (by_rtc ? kPm1RtcSts : 0); }
  bool rtc_wake_enabled() const { return (state.enable & kPm1RtcEn) != 0; }

  AcpiPm1State state;
  AcpiPm1Events events{&state};
  AcpiPm1Control control;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_ACPI_PM1_H_
