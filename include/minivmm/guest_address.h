// A guest-physical address: a strong type so that host pointers, guest
// addresses and lengths cannot be mixed up.
#ifndef MINIVMM_GUEST_ADDRESS_H_
#define MINIVMM_GUEST_ADDRESS_H_

#include <compare>
#include <cstdint>

namespace minivmm {

class GuestAddress {
 public:
  constexpr GuestAddress() = default;
  constexpr explicit GuestAddress(uint64_t value) : value_(value) {}

  constexpr uint64_t value() const { return value_; }

  // Wraps on overflow like the CPU would; range checks happen in GuestMemory,
  // which checks `gpa + len` for overflow before it trusts it.
  constexpr GuestAddress operator+(uint64_t offset) const { return GuestAddress(value_ + offset); }
  constexpr bool IsAligned(uint64_t alignment) const { return value_ % alignment == 0; }

  constexpr auto operator<=>(const GuestAddress&) const = default;

 private:
  uint64_t value_ = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_GUEST_ADDRESS_H_
