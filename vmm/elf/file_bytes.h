// Bounds and typed copies over an untrusted image file held in host memory,
// and the segment copy into guest memory, shared by the image loaders (ELF,
// Multiboot).
#ifndef MINIVMM_VMM_ELF_FILE_BYTES_H_
#define MINIVMM_VMM_ELF_FILE_BYTES_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <type_traits>

#include "minivmm/guest_memory.h"

namespace minivmm {

// True when [offset, offset + len) lies inside a buffer of `size` bytes,
// without overflow.
inline bool InsideFile(uint64_t offset, uint64_t len, uint64_t size) {
  return offset <= size && len <= size - offset;
}

// A T copied out of `file` at `offset`. Precondition (the caller checks):
// InsideFile(offset, sizeof(T), file.size()).
template <typename T>
T CopyFromFile(std::span<const uint8_t> file, uint64_t offset) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  // memcpy because the file buffer carries no alignment guarantee.
  // Safety: the caller checked the bounds; T is trivially copyable.
  std::memcpy(&value, file.data() + offset, sizeof(T));
  return value;
}

// Copies `bytes` to gpa and zeroes the rest of [gpa, gpa + memsz), a
// segment's bss. False, and nothing written, when that range is not inside
// RAM. Precondition: bytes.size() <= memsz.
[[nodiscard]] inline bool LoadSegment(const GuestMemory& memory, GuestAddress gpa,
                                      std::span<const uint8_t> bytes, uint64_t memsz) {
  const std::optional<std::span<uint8_t>> dest = memory.GetSpan(gpa, memsz);
  if (!dest) return false;
  std::copy(bytes.begin(), bytes.end(), dest->begin());
  std::fill(dest->begin() + bytes.size(), dest->end(), uint8_t{0});
  return true;
}

}  // namespace minivmm

#endif  // MINIVMM_VMM_ELF_FILE_BYTES_H_
