// Guest RAM as the VMM sees it: the only way host code reads or writes guest
// memory. Every accessor checks the whole range [gpa, gpa + len) against RAM,
// including overflow of gpa + len, and returns absl::OutOfRangeError (which the
// hypercall layer maps to -EFAULT) instead of touching anything.
//
// Guest data is untrusted and can change at any moment (another vCPU, a DMA
// in a real device): copy it into host memory with Read/ReadObj once, then
// validate and use the copy.
#ifndef MINIVMM_VMM_MEMORY_GUEST_MEMORY_H_
#define MINIVMM_VMM_MEMORY_GUEST_MEMORY_H_

#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/memory/guest_address.h"

namespace minivmm {

class GuestMemory {
 public:
  // Does not own `ram`; RAM starts at guest-physical 0 and `ram` must outlive
  // this object. An empty span is a valid, empty RAM.
  explicit GuestMemory(std::span<uint8_t> ram) : ram_(ram) {}

  uint64_t size() const { return ram_.size(); }

  // True when [gpa, gpa + len) lies wholly inside RAM and does not wrap.
  // A zero-length range is inside when gpa <= size().
  bool Contains(GuestAddress gpa, uint64_t len) const {
    return gpa.value() <= ram_.size() && len <= ram_.size() - gpa.value();
  }

  // A host view of [gpa, gpa + len). Valid as long as the RAM mapping; the
  // guest may change the bytes behind it at any time.
  absl::StatusOr<std::span<uint8_t>> GetSpan(GuestAddress gpa, uint64_t len) const;

  // Copies len = out.size() bytes from guest memory into `out`.
  absl::Status Read(GuestAddress gpa, std::span<uint8_t> out) const;
  // Copies `in` into guest memory at gpa. Nothing is written on error.
  absl::Status Write(GuestAddress gpa, std::span<const uint8_t> in) const;

  template <typename T>
  absl::StatusOr<T> ReadObj(GuestAddress gpa) const {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    absl::Status status = Read(gpa, std::span(reinterpret_cast<uint8_t*>(&value), sizeof(T)));
    if (!status.ok()) return status;
    return value;
  }

  template <typename T>
  absl::Status WriteObj(GuestAddress gpa, const T& value) const {
    static_assert(std::is_trivially_copyable_v<T>);
    return Write(gpa, std::span(reinterpret_cast<const uint8_t*>(&value), sizeof(T)));
  }

 private:
  std::span<uint8_t> ram_;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_MEMORY_GUEST_MEMORY_H_
