// COM1: the transmit side of a 16550A UART, enough for the console drivers of
// Linux (8250), QEMU-style firmware and our own guest. There is no receive
// path and no interrupt line: the guest polls LSR, which always says the
// transmitter is empty, so every THR byte goes straight to the console sink.
//
// Registers (offset from the base, 8 ports; DLAB = LCR bit 7):
//   0  read: RBR (0, or the byte sent in loopback)   write: THR, or DLL with DLAB
//   1  IER (low 4 bits), or DLM with DLAB
//   2  read: IIR = 0x01 "no interrupt", | 0xC0 once FCR enabled the FIFOs
//      write: FCR (only the FIFO-enable bit is kept)
//   3  LCR   4  MCR (low 5 bits)   5  LSR (read-only: 0x60 | DR)
//   6  MSR (read-only: DCD|DSR|CTS, or MCR reflected in loopback)   7  SCR
// Loopback (MCR bit 4) is what Linux's 8250 autoconfig probes: MSR reflects
// the MCR outputs and a THR byte lands in RBR instead of on the console.
#ifndef MINIVMM_DEVICES_UART16550_H_
#define MINIVMM_DEVICES_UART16550_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "minivmm/io_device.h"
#include "minivmm/sinks.h"

namespace minivmm {

class Uart16550 final : public IoDevice {
 public:
  static constexpr uint64_t kRegisterCount = 8;  // register on the bus with this length

  // `console` receives transmitted bytes; not owned, may be null (bytes are
  // counted and dropped). Not thread-safe: one vCPU drives it at a time.
  explicit Uart16550(ConsoleSink* console) : console_(console) {}

  std::string_view Name() const override { return "uart"; }

  // Accesses wider than one byte are split into byte accesses at consecutive
  // registers, as on an 8-bit ISA bus. Offsets past the last register read as
  // 0xFF and ignore writes.
  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

  // Bytes written to THR and passed to the console (loopback bytes excluded).
  uint64_t bytes_transmitted() const { return bytes_transmitted_; }

 private:
  uint8_t ReadRegister(uint64_t offset);
  void WriteRegister(uint64_t offset, uint8_t value);
  void Transmit(uint8_t byte);
  bool Dlab() const { return (lcr_ & 0x80) != 0; }
  bool Loopback() const { return (mcr_ & 0x10) != 0; }
  uint8_t ModemStatus() const;

  ConsoleSink* console_;
  uint64_t bytes_transmitted_ = 0;
  uint8_t rbr_ = 0;
  bool data_ready_ = false;  // rbr_ holds a loopback byte
  uint8_t ier_ = 0;
  bool fifo_enabled_ = false;
  uint8_t lcr_ = 0x03;  // 8N1, as firmware leaves it
  uint8_t mcr_ = 0x08;  // OUT2, as QEMU resets it
  uint8_t scr_ = 0;
  uint8_t dll_ = 0x0C;  // 9600 baud
  uint8_t dlm_ = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_UART16550_H_
