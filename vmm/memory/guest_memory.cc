#include "minivmm/guest_memory.h"

#include <atomic>
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

bool GuestMemory::AtomicOr32(GuestAddress gpa, uint32_t bits) const {
  if (!gpa.IsAligned(sizeof(uint32_t)) || !Contains(gpa, sizeof(uint32_t))) return false;
  uint8_t* host = ram_.data() + gpa.value();
  if (reinterpret_cast<uintptr_t>(host) % std::atomic_ref<uint32_t>::required_alignment != 0)
    return false;  // a RAM buffer that is not itself aligned (only a test's)
  // Safety: 4 aligned bytes inside RAM (checked above), which outlives this call.
  std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(host))
      .fetch_or(bits, std::memory_order_seq_cst);
  return true;
}

}  // namespace minivmm
