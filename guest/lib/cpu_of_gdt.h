// Which CPU a GDTR base names (kernel/percpu.h: CurrentCpu). Pure; also
// compiled on the host (tests/guest/cpu_of_gdt_test.cc).
//
// Under minivmm CPU n's GDT is at MVMM_CPU_GDT_GPA(n), one every
// MVMM_GDT_STRIDE bytes from MVMM_GDT_GPA; under the PVH entry the kernel
// runs its own GDT (pvh_gdt, guest/arch/pvh.S) on its one CPU, 0. Any other
// base is no CPU's: a host fault or a kernel bug, never to be taken for
// CPU 0 (a CPU that misidentified itself would look like CPU 0 taking its
// own locks).
#ifndef GUEST_LIB_CPU_OF_GDT_H_
#define GUEST_LIB_CPU_OF_GDT_H_

#include <stdint.h>

#include "minivmm_abi/boot.h"

namespace guest {

static_assert((MVMM_GDT_STRIDE & (MVMM_GDT_STRIDE - 1)) == 0, "the stride is a power of two");
inline constexpr int kGdtStrideShift = __builtin_ctzll(MVMM_GDT_STRIDE);

// The hot half, inline in CurrentCpu: the CPU whose minivmm GDT starts at
// `base`, or a value >= MVMM_MAX_CPUS when none does. One subtract, one
// rotate and (in the caller) one compare: rotating the offset right by the
// stride's shift brings an offset that is not a multiple of the stride
// (bits below the shift) to the top, and a base below MVMM_GDT_GPA wraps
// around, so both come out far above MVMM_MAX_CPUS.
constexpr uint64_t MinivmmCpuOfGdtBase(uint64_t base) {
  const uint64_t off = base - MVMM_GDT_GPA;
  return (off >> kGdtStrideShift) | (off << (64 - kGdtStrideShift));
}

struct CpuOfGdt {
  bool known;    // false: `base` is no CPU's
  uint32_t cpu;  // when known
};

// The whole lookup. `pvh_gdt` is the kernel's own PVH GDT when it runs
// outside minivmm, 0 under minivmm (where that GDT is nobody's).
constexpr CpuOfGdt CpuOfGdtBase(uint64_t base, uint64_t pvh_gdt) {
  const uint64_t n = MinivmmCpuOfGdtBase(base);
  if (n < MVMM_MAX_CPUS) return {true, static_cast<uint32_t>(n)};
  if (pvh_gdt != 0 && base == pvh_gdt) return {true, 0};
  return {false, 0};
}

}  // namespace guest

#endif  // GUEST_LIB_CPU_OF_GDT_H_
