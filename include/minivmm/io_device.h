// A port-I/O or MMIO device: one class per device, registered on a Bus by
// the VM builder. Offsets are relative to the device's base; `data` is the
// access (1, 2, 4 or 8 bytes). A device never sees KVM objects.
#ifndef MINIVMM_IO_DEVICE_H_
#define MINIVMM_IO_DEVICE_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "minivmm/exit_context.h"

namespace minivmm {

class IoDevice {
 public:
  virtual ~IoDevice() = default;

  // Short stable name used in statistics ("uart", "debug-exit", ...).
  virtual std::string_view Name() const = 0;

  // Fills `data` for a guest read. Must not fail: unknown registers read as
  // the device documents (usually all ones or zero).
  virtual void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) = 0;
  // Handles a guest write. Bad values are guest input: ignore or count them.
  virtual void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_IO_DEVICE_H_
