// Fuzzes the 16550 UART with any sequence of reads and writes at any offset
// and width, against a register-level model written from the comment in
// devices/uart16550.h. Every byte read must match the model, and the bytes
// sent to the console must be exactly the THR writes outside loopback.
//
// Input: repeated u8 op (bit 0: write; bits 1-3 offset 0-7; bit 4: take a
// raw u64 offset instead; bits 5-7 unused), u8 width (% 10, 0 included),
// width data bytes for a write.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/input.h"
#include "devices/uart16550.h"
#include "tests/common/fake_vm.h"

namespace minivmm::fuzz {
namespace {

struct Model {
  uint8_t rbr = 0, ier = 0, lcr = 0x03, mcr = 0x08, scr = 0, dll = 0x0C, dlm = 0;
  bool dr = false, fifo = false;
  std::string out;

  bool dlab() const { return lcr & 0x80; }
  bool loop() const { return mcr & 0x10; }

  uint8_t Read(uint64_t off) {
    switch (off) {
      case 0:
        if (dlab()) return dll;
        dr = false;
        return rbr;
      case 1:
        return dlab() ? dlm : ier;
      case 2:
        return fifo ? 0xC1 : 0x01;
      case 3:
        return lcr;
      case 4:
        return mcr;
      case 5:
        return 0x60 | (dr ? 1 : 0);
      case 6:
        if (!loop()) return 0xB0;
        return (mcr & 2 ? 0x10 : 0) | (mcr & 1 ? 0x20 : 0) | (mcr & 4 ? 0x40 : 0) |
               (mcr & 8 ? 0x80 : 0);
      case 7:
        return scr;
      default:
        return 0xFF;
    }
  }
  void Write(uint64_t off, uint8_t v) {
    switch (off) {
      case 0:
        if (dlab()) {
          dll = v;
        } else if (loop()) {
          rbr = v;
          dr = true;
        } else {
          out.push_back(static_cast<char>(v));
        }
        break;
      case 1:
        if (dlab())
          dlm = v;
        else
          ier = v & 0x0F;
        break;
      case 2:
        fifo = v & 1;
        break;
      case 3:
        lcr = v;
        break;
      case 4:
        mcr = v & 0x1F;
        break;
      case 7:
        scr = v;
        break;
      default:
        break;
    }
  }
};

}  // namespace
}  // namespace minivmm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace minivmm;
  using namespace minivmm::fuzz;
  Input in(data, size);
  testing::FakeVm vm(/*ram_size=*/0, /*gdt_size=*/0);  // the console keeps all it is sent
  Uart16550 uart(&vm.console);
  Model model;
  while (!in.empty()) {
    const uint8_t op = in.U8();
    const uint64_t offset = op & 0x10 ? in.U64() : op >> 1 & 7;
    const size_t width = in.U8() % 10;
    std::vector<uint8_t> buf(width, 0x5A);
    if (op & 1) {
      const auto bytes = in.Bytes(width);
      if (!bytes.empty()) std::memcpy(buf.data(), bytes.data(), bytes.size());
      uart.Write(offset, buf, vm.exit);
      for (size_t i = 0; i < width; ++i) model.Write(offset + i, buf[i]);
    } else {
      uart.Read(offset, buf, vm.exit);
      for (size_t i = 0; i < width; ++i) FUZZ_CHECK(buf[i] == model.Read(offset + i));
    }
    FUZZ_CHECK(vm.console.out == model.out);
    FUZZ_CHECK(uart.bytes_transmitted() == model.out.size());
    FUZZ_CHECK(vm.control.request == VcpuRequest::kNone);  // a UART never stops the VM
  }
  return 0;
}
