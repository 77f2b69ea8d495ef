// Segment descriptors for tests and fuzzers: built from their fields, a
// typical TLS descriptor, and the guest-physical address of a TLS slot.
#ifndef MINIVMM_TESTS_COMMON_DESCRIPTORS_H_
#define MINIVMM_TESTS_COMMON_DESCRIPTORS_H_

#include <cstdint>

#include "minivmm_abi/boot.h"

namespace minivmm::testing {

// Builds a legacy segment descriptor from its fields (Intel SDM 3.4.5).
struct DescFields {
  uint32_t base = 0;
  uint32_t limit = 0;  // 20 bits
  unsigned type = 0, s = 0, dpl = 0, p = 0, avl = 0, l = 0, db = 0, g = 0;
};
inline uint64_t MakeDesc(const DescFields& f) {
  return (uint64_t{f.limit} & 0xFFFF) | (uint64_t{f.base} & 0xFFFFFF) << 16 |
         uint64_t{f.type & 0xF} << 40 | uint64_t{f.s & 1} << 44 | uint64_t{f.dpl & 3} << 45 |
         uint64_t{f.p & 1} << 47 | (uint64_t{f.limit} >> 16 & 0xF) << 48 |
         uint64_t{f.avl & 1} << 52 | uint64_t{f.l & 1} << 53 | uint64_t{f.db & 1} << 54 |
         uint64_t{f.g & 1} << 55 | (uint64_t{f.base} >> 24) << 56;
}

// A typical Linux TLS descriptor: flat 4 GiB user data, DPL 3, read/write.
inline constexpr uint64_t kUserTlsDesc = 0x00CFF2000000FFFFull;

// The guest-physical address of TLS slot `i` (0-2) of CPU `cpu`'s GDT.
inline constexpr uint64_t TlsSlotGpa(int i, uint32_t cpu = 0) {
  return MVMM_CPU_GDT_GPA(cpu) + 8 * (MVMM_GDT_TLS_FIRST + i);
}

}  // namespace minivmm::testing

#endif  // MINIVMM_TESTS_COMMON_DESCRIPTORS_H_
