// Port MVMM_HYPERCALL_PORT. A hypercall is one 4-byte `out` to it
// (docs/design.md "Hypercalls"): the run loop recognises that exit with
// IsHypercall() and hands it straight to Dispatcher::HandleExit, without a
// bus lookup. The port is still a device on the port bus, so that nothing
// else can claim it and its exits are counted under a device named
// "hypercall"; any other access to it (1- or 2-byte, `rep outs`, `in`)
// reaches this device and does nothing (reads return all ones).
#ifndef MINIVMM_HYPERCALLS_HYPERCALL_PORT_H_
#define MINIVMM_HYPERCALLS_HYPERCALL_PORT_H_

#include <span>
#include <string_view>

#include "minivmm/io_device.h"
#include "minivmm_abi/hypercall.h"
#include "vmm/core/vcpu_exit.h"

namespace minivmm {

class HypercallPort final : public IoDevice {
 public:
  static bool IsHypercall(const IoOut& io) {
    return io.port == MVMM_HYPERCALL_PORT && io.size == 4 && io.data.size() == 4;
  }

  std::string_view Name() const override { return "hypercall"; }
  void Read(uint64_t, std::span<uint8_t> data, ExitContext&) override {
    for (auto& b : data) b = 0xff;
  }
  void Write(uint64_t, std::span<const uint8_t>, ExitContext&) override {}
};

}  // namespace minivmm

#endif  // MINIVMM_HYPERCALLS_HYPERCALL_PORT_H_
