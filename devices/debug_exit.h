// QEMU's isa-debug-exit device (hw/misc/debugexit.c), at port 0xF4 here as in
// the usual `-device isa-debug-exit,iobase=0xf4,iosize=0x04`: a guest write
// of value v ends the VM with status (v << 1) | 1, so a guest can never exit
// 0 this way (0 stays "the VMM itself stopped normally").
//
// Semantics, matching QEMU:
//  - a write of 1, 2 or 4 bytes at any offset inside the device's range takes
//    the value v little-endian (zero-extended) and requests shutdown;
//  - reads return 0;
//  - QEMU passes the status to exit(), so the shell sees its low 8 bits. We
//    request shutdown with exactly those low 8 bits, ((v << 1) | 1) & 0xFF, so
//    the code is the same under minivmm and QEMU and always fits an int.
// Accesses of any other size (0, 3, 5-8 bytes; QEMU refuses them) are ignored
// and counted in ignored_writes().
#ifndef MINIVMM_DEVICES_DEBUG_EXIT_H_
#define MINIVMM_DEVICES_DEBUG_EXIT_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "minivmm/io_device.h"

namespace minivmm {

class DebugExit final : public IoDevice {
 public:
  static constexpr uint64_t kIoSize = 4;  // register on the bus with this length

  // The status a write of `value` produces: ((value << 1) | 1) & 0xFF.
  static constexpr int StatusFor(uint64_t value) {
    return static_cast<int>(((value << 1) | 1) & 0xFF);
  }

  std::string_view Name() const override { return "debug-exit"; }

  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
  // Calls ctx.control.Shutdown(StatusFor(v)) for a valid write.
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

  uint64_t ignored_writes() const { return ignored_writes_; }

 private:
  uint64_t ignored_writes_ = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_DEBUG_EXIT_H_
