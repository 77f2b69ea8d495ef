#include "minivmm/guest_memory.h"

#include <cstring>

namespace minivmm {

std::optional<std::span<uint8_t>> GuestMemory::GetSpan(GuestAddress gpa, uint64_t len) const {
  if (!Contains(gpa, len)) return std::nullopt;
  return ram_.subspan(gpa.value(), len);
}

void GuestMemory::CopyOut(GuestAddress gpa, void* out, size_t len) const {
  // Safety: [gpa, gpa + len) passed Contains (caller); `out` is len host bytes of a trivial type.
  if (len != 0) std::memcpy(out, ram_.data() + gpa.value(), len);
}

void GuestMemory::CopyIn(GuestAddress gpa, const void* in, size_t len) const {
  // Safety: [gpa, gpa + len) passed Contains (caller); `in` is len host bytes of a trivial type.
  if (len != 0) std::memcpy(ram_.data() + gpa.value(), in, len);
}

}  // namespace minivmm
