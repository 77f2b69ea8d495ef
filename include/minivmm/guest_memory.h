// Guest RAM as the VMM sees it: the only way host code reads or writes guest
// memory. Every accessor checks the whole range [gpa, gpa + size in bytes)
// against RAM, including overflow of that sum and of the byte size of a typed
// span, and refuses (false or nullopt, nothing copied) instead of touching
// anything. No accessor allocates, formats or builds an absl::Status: they
// are on the exit path of every hypercall that reads guest memory.
//
// Guest data is untrusted and can change at any moment (another vCPU, a DMA
// in a real device): copy it into host memory with Read/ReadObj once, then
// validate and use the copy.
#ifndef MINIVMM_GUEST_MEMORY_H_
#define MINIVMM_GUEST_MEMORY_H_

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <type_traits>

#include "minivmm/guest_address.h"

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

  // True when an array of `count` T at gpa lies wholly inside RAM: count *
  // sizeof(T) must not overflow, then as Contains.
  template <typename T>
  bool ContainsArray(GuestAddress gpa, uint64_t count) const {
    return count <= std::numeric_limits<uint64_t>::max() / sizeof(T) &&
           Contains(gpa, count * sizeof(T));
  }

  // A host view of [gpa, gpa + len), or nullopt when that is not inside RAM.
  // Valid as long as the RAM mapping; the guest may change the bytes behind
  // it at any time, so validate a copy, not the view.
  [[nodiscard]] std::optional<std::span<uint8_t>> GetSpan(GuestAddress gpa, uint64_t len) const;

  // Copies out.size() elements from guest memory at gpa into `out`. False,
  // and `out` untouched, when the range is not wholly inside RAM.
  template <typename T, size_t N>
  [[nodiscard]] bool Read(GuestAddress gpa, std::span<T, N> out) const {
    static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>,
                  "Read copies bytes into a writable span of a trivially copyable type");
    if (!ContainsArray<T>(gpa, out.size())) return false;
    CopyOut(gpa, out.data(), out.size_bytes());
    return true;
  }

  // Copies `in` (of any trivially copyable T, const or not) into guest memory
  // at gpa. False, and nothing written, when the range is not wholly inside
  // RAM.
  template <typename T, size_t N>
  [[nodiscard]] bool Write(GuestAddress gpa, std::span<T, N> in) const {
    static_assert(std::is_trivially_copyable_v<T>,
                  "Write copies bytes of a trivially copyable type");
    if (!ContainsArray<T>(gpa, in.size())) return false;
    CopyIn(gpa, in.data(), in.size_bytes());
    return true;
  }

  // One T from guest memory, or nullopt when [gpa, gpa + sizeof(T)) is not
  // inside RAM. T need not be default-constructible.
  template <typename T>
  [[nodiscard]] std::optional<T> ReadObj(GuestAddress gpa) const {
    static_assert(std::is_trivially_copyable_v<T>,
                  "ReadObj copies bytes of a trivially copyable type");
    std::array<std::byte, sizeof(T)> raw;
    if (!Read(gpa, std::span(raw))) return std::nullopt;
    return std::bit_cast<T>(raw);
  }

  // Writes `value` at gpa; false, and nothing written, outside RAM.
  template <typename T>
  [[nodiscard]] bool WriteObj(GuestAddress gpa, const T& value) const {
    static_assert(std::is_trivially_copyable_v<T>,
                  "WriteObj copies bytes of a trivially copyable type");
    return Write(gpa, std::span<const T, 1>(&value, 1));
  }

  // ORs `bits` into the 32-bit word at gpa with one atomic read-modify-write,
  // so that a guest vCPU's own atomic exchange of the word on another thread
  // loses neither update. False, and nothing written, when the word is not
  // wholly inside RAM or not 4-byte aligned.
  [[nodiscard]] bool AtomicOr32(GuestAddress gpa, uint32_t bits) const;

 private:
  // The byte copies behind Read and Write. Precondition: Contains(gpa, len).
  void CopyOut(GuestAddress gpa, void* out, size_t len) const;
  void CopyIn(GuestAddress gpa, const void* in, size_t len) const;

  std::span<uint8_t> ram_;
};

}  // namespace minivmm

#endif  // MINIVMM_GUEST_MEMORY_H_
