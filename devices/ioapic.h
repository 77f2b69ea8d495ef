// The q35 machine's IOAPIC (docs/machines.md, "q35"): an 82093AA-style I/O
// APIC with 24 pins, emulated in the VMM while KVM keeps the local APICs
// (KVM_CAP_SPLIT_IRQCHIP, QEMU's `-M q35,kernel-irqchip=split`). It follows
// QEMU's hw/intc/ioapic.c (version 0x20, the one with an EOI register): every
// interrupt leaves as an MSI through an MsiSink (an Intel IOMMU, which remaps
// it, or KVM_SIGNAL_MSI), and the machine keeps one KVM MSI route per pin in
// step (OnRoutesChanged, MessageOf) so that KVM knows which vectors are level
// triggered and exits with KVM_EXIT_IOAPIC_EOI, which the machine passes to
// Eoi().
//
// MMIO, at kMmioBase for kIoSize bytes; as in QEMU the register block repeats
// every 256 bytes (only the offset's low 8 bits are decoded), an 8-byte access
// acts as two 4-byte accesses (low half first), and 1-, 2- and 4-byte accesses
// act as themselves:
//   0x00 IOREGSEL  any size; a write keeps the value's low 8 bits, a read
//                  returns them (QEMU takes any size here).
//   0x10 IOWIN     4 bytes only: the indirect register IOREGSEL selects.
//   0x40 EOI       4 bytes, write only: Eoi(value); a value above 0xff
//                  matches no entry (QEMU compares it whole), so it does
//                  nothing and is counted in Counters::ignored_accesses.
// Anything else (another offset, another size at IOWIN or EOI, a read of EOI,
// a size or a byte past kIoSize that the bus never passes) reads 0, writes
// nothing, and is counted in Counters::ignored_accesses.
//
// Indirect registers (IOREGSEL value):
//   0x00 ID: bits 27:24 read/write, the rest read 0.
//   0x01 version: 0x00170020 (0x20, 23 = the highest entry's number); read only.
//   0x02 arbitration: reads as the ID; read only.
//   0x10 + 2n, 0x11 + 2n: low and high dwords of redirection entry n < 24.
// Writes to 0x01 and 0x02 and any access to another index (reads 0) are
// counted in Counters::ignored_register_accesses.
//
// Redirection entry, 64 bits: vector 7:0, delivery mode 10:8, destination mode
// 11 (1 = logical), delivery status 12 (read only, always 0), polarity 13
// (kept, not applied: a line is asserted when its level is high, as in QEMU),
// remote IRR 14 (read only), trigger mode 15 (1 = level), mask 16, bits 47:17
// kept as written, bits 63:48 "dest_idx": the destination in 63:56 in the
// compatibility format, or with interrupt remapping the format bit 48 and the
// interrupt index in 63:49. Every entry resets to 0x10000 (masked). A write of
// either dword keeps the read-only bits, clears remote IRR if the entry is now
// edge triggered (Linux's __eoi_ioapic_pin relies on it), tells the routes-
// changed callback, then delivers whatever is pending (below).
//
// The MSI an entry sends (QEMU's ioapic_entry_parse), whichever format:
//   address = 0xFEE00000 | dest_idx << 4 | dest_mode << 2
//   data    = vector | delivery_mode << 8 | trigger_mode << 15
// so a compatibility destination lands in address bits 19:12 and a remappable
// entry's format bit in address bit 4 with its index in bits 19:5, which is
// what an Intel IOMMU decodes. Messages go out with SourceId std::nullopt.
// Delivery mode ExtINT (7) asks a PIC for the vector; this machine has none,
// so such a delivery changes the entry's state as any other but sends nothing
// and is counted in Counters::extint_dropped.
//
// Interrupt state (QEMU's ioapic_set_irq, ioapic_service and
// ioapic_eoi_broadcast): an IRR bit per pin. SetLevel(pin, high) drives a
// pin: an edge-triggered pin, when high and unmasked, sets its IRR bit and
// delivers, on every high call, repeats included (IrqLines callers do not
// filter them, and QEMU's ioapic_set_irq does not either); a level-triggered pin copies the level
// into IRR and, when high with remote IRR clear, delivers. Delivering walks every pin with IRR set
// and unmasked: edge clears IRR and sends; level with remote IRR clear sets remote IRR and sends;
// level with remote IRR set waits for Eoi. Eoi(vector) clears remote IRR of every level entry with
// that vector, and one that is unmasked with its line still high delivers again. QEMU's slow-down
// of a level interrupt that re-fires 10000 times in a row on EOI is not modelled.
//
// Not thread-safe and no internal locking: every call (MMIO, SetLevel, Eoi,
// the queries) comes from the exiting vCPU's thread under the run loop's lock,
// and the sink and callback are called on that same thread, under that lock;
// neither may call Write, SetLevel, Eoi or Reset (the const queries are fine).
#ifndef MINIVMM_DEVICES_IOAPIC_H_
#define MINIVMM_DEVICES_IOAPIC_H_

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <utility>

#include "devices/irq_lines.h"
#include "devices/msi.h"
#include "minivmm/io_device.h"

namespace minivmm {

class Ioapic final : public IoDevice, public IrqLines {
 public:
  static constexpr uint64_t kMmioBase = 0xFEC00000;  // register on the MMIO bus here
  static constexpr uint64_t kIoSize = 0x1000;        // ... with this length
  static constexpr uint32_t kPins = 24;
  static constexpr uint32_t kVersion = 0x20 | ((kPins - 1) << 16);  // indirect register 0x01

  // MMIO offsets (after the 256-byte alias) and redirection-entry bits.
  static constexpr uint64_t kRegSel = 0x00;
  static constexpr uint64_t kWindow = 0x10;
  static constexpr uint64_t kEoi = 0x40;
  static constexpr uint64_t kRemoteIrr = 1 << 14;
  static constexpr uint64_t kLevel = 1 << 15;
  static constexpr uint64_t kMasked = 1 << 16;

  // What the machine reports in its notes. Every field only ever grows.
  struct Counters {
    uint64_t ignored_accesses = 0;           // MMIO accesses that reached no register
    uint64_t ignored_register_accesses = 0;  // IOWIN on a read-only or missing register
    uint64_t bad_pins = 0;                   // SetLevel on a pin >= kPins (a caller bug)
    uint64_t extint_dropped = 0;             // ExtINT deliveries: no PIC here
    uint64_t sent = 0;                       // messages passed to the sink
  };

  // `sink` is not owned and must outlive the device. `id` is the ID register
  // at construction and after Reset(); only its low 4 bits are kept.
  explicit Ioapic(MsiSink* sink, uint8_t id = 0);

  std::string_view Name() const override { return "ioapic"; }

  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

  // Drives pin `pin` to `high` (IrqLines; the interrupt state above). The
  // machine maps its lines onto pins: ISA IRQ 0 (the PIT) on pin 2, as the
  // MADT's interrupt source override says (QEMU's ioapic_set_irq does that
  // mapping itself, so its pin 0 has no input; here pin 0 is a pin). A pin >=
  // kPins is the caller's bug: ignored and counted in bad_pins.
  void SetLevel(uint32_t pin, bool high) override;

  // The EOI of `vector` by a local APIC (KVM_EXIT_IOAPIC_EOI), as the EOI
  // register: see the header comment.
  void Eoi(uint8_t vector);

  // Puts the device back as constructed: ID `id`, IOREGSEL 0, IRR clear,
  // every entry 0x10000. Calls the routes-changed callback. Counters stay.
  void Reset();

  // `callback` (replacing any earlier one; empty for none) is called after
  // every guest write to a redirection entry, changed or not, and on Reset(),
  // before pending interrupts are delivered.
  void OnRoutesChanged(std::function<void()> callback) { routes_changed_ = std::move(callback); }

  // The MSI pin `pin`'s entry would send now (ExtINT's included, with the
  // entry's vector); zero for a pin >= kPins.
  MsiMessage MessageOf(uint32_t pin) const;
  // Whether `pin`'s entry is level triggered (false for pin >= kPins) /
  // masked (true for pin >= kPins).
  bool IsLevel(uint32_t pin) const { return pin < kPins && (entries_[pin] & kLevel) != 0; }
  bool IsMasked(uint32_t pin) const { return pin >= kPins || (entries_[pin] & kMasked) != 0; }

  // State for tests and notes: the whole entry of `pin` (0 for pin >= kPins),
  // the IRR bits (bit n = pin n), the ID (0-15) and IOREGSEL.
  uint64_t Entry(uint32_t pin) const { return pin < kPins ? entries_[pin] : 0; }
  uint32_t irr() const { return irr_; }
  uint8_t id() const { return id_; }
  uint8_t register_select() const { return regsel_; }
  const Counters& counters() const { return counters_; }

 private:
  uint32_t ReadWindow();
  void WriteWindow(uint32_t value);
  // One access of at most 4 bytes, as QEMU's ioapic_mem_read/write see it.
  void ReadPiece(uint64_t offset, std::span<uint8_t> data);
  void WritePiece(uint64_t offset, std::span<const uint8_t> data);
  // Delivers every pending interrupt (QEMU's ioapic_service).
  void Service();

  MsiSink* sink_;
  uint8_t reset_id_;
  uint8_t id_ = 0;
  uint8_t regsel_ = 0;
  uint32_t irr_ = 0;
  std::array<uint64_t, kPins> entries_{};
  std::function<void()> routes_changed_;
  Counters counters_;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_IOAPIC_H_
