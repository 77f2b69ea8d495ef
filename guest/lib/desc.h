// x86 segment descriptor encoding for the three TLS slots. Pure.
#ifndef GUEST_LIB_DESC_H_
#define GUEST_LIB_DESC_H_

#include <stdint.h>

namespace guest {

inline constexpr uint64_t kDescPresent = 1ull << 47;
inline constexpr uint64_t kDescS = 1ull << 44;         // code/data, not system
inline constexpr uint64_t kDescTypeCode = 1ull << 43;  // type bit 3
inline constexpr uint64_t kDescAccessed = 1ull << 40;
inline constexpr uint64_t kDescDplShift = 45;

// A present, writable, 32-bit, byte-granular user (DPL 3) data segment with
// the given base and a 20-bit limit. The accessed bit is set so that loading
// it never needs a write to the read-only GDT (docs/hosts.md: such a load
// hangs the vCPU); the VMM would set it anyway, which is why the guest keeps
// shadow copies rather than comparing against the GDT.
constexpr uint64_t MakeTlsDescriptor(uint32_t base, uint32_t limit) {
  uint64_t d = 0;
  d |= limit & 0xffffull;
  d |= static_cast<uint64_t>(base & 0xffffffu) << 16;
  d |= 0x3ull << 40;  // type: data, read/write, accessed
  d |= kDescS;
  d |= 3ull << kDescDplShift;
  d |= kDescPresent;
  d |= static_cast<uint64_t>((limit >> 16) & 0xf) << 48;
  d |= 1ull << 54;  // D/B: 32-bit
  d |= static_cast<uint64_t>(base >> 24) << 56;
  return d;
}

constexpr uint32_t DescriptorBase(uint64_t d) {
  return static_cast<uint32_t>(((d >> 16) & 0xffffff) | ((d >> 56) << 24));
}

// The rule the VMM applies to a TLS slot (docs/design.md "GDT"): all-zero, or a
// present data segment (S=1, type bit 3 clear) with DPL 3. The guest applies
// it to set_tls system calls so a user task cannot get a refusal it did not
// ask for, and the unit tests pin both sides to the same rule.
constexpr bool IsAcceptableTlsDescriptor(uint64_t d) {
  if (d == 0) return true;
  return (d & kDescPresent) && (d & kDescS) && !(d & kDescTypeCode) &&
         ((d >> kDescDplShift) & 3) == 3;
}

}  // namespace guest

#endif  // GUEST_LIB_DESC_H_
