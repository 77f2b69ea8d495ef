// A device test's guest accesses: a read or write of `size` bytes at
// `offset` of an IoDevice as one little-endian value, the way an `in`/`out`
// or an MMIO access of that size reaches it.
#ifndef MINIVMM_TESTS_COMMON_DEVICE_ACCESS_H_
#define MINIVMM_TESTS_COMMON_DEVICE_ACCESS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "minivmm/exit_context.h"
#include "minivmm/io_device.h"

namespace minivmm::testing {

// The value the device reads: its bytes are 0xEE before the read, so that a
// byte the device leaves unwritten shows.
inline uint64_t ReadLe(IoDevice& device, uint64_t offset, size_t size, ExitContext& ctx) {
  std::vector<uint8_t> data(size, 0xEE);
  device.Read(offset, data, ctx);
  uint64_t value = 0;
  for (size_t i = 0; i < size && i < 8; ++i) value |= uint64_t{data[i]} << (8 * i);
  return value;
}

inline void WriteLe(IoDevice& device, uint64_t offset, size_t size, uint64_t value,
                    ExitContext& ctx) {
  std::vector<uint8_t> data(size);
  for (size_t i = 0; i < size && i < 8; ++i) data[i] = static_cast<uint8_t>(value >> (8 * i));
  device.Write(offset, data, ctx);
}

}  // namespace minivmm::testing

#endif  // MINIVMM_TESTS_COMMON_DEVICE_ACCESS_H_
