// What the kernel learned at boot, read-only after KernelMain's set-up.
#ifndef GUEST_KERNEL_BOOT_H_
#define GUEST_KERNEL_BOOT_H_

#include <stdint.h>

#include "lib/cmdline.h"
#include "minivmm_abi/boot.h"

namespace guest {

struct BootState {
  bool under_minivmm;   // entered through the 64-bit boot with boot_info
  bool ring3_nm;        // ring-3 SSE with CR0.TS=1 raises #NM on this host
  uint64_t patched_sites;  // pte_flags call sites rewritten at boot
  uint64_t memory_size;
  uint64_t gdt_gpa;
  mvmm_tss* tss;
  uint64_t first_free;
  uint32_t timer_hz;
  Config config;
};
extern BootState g_boot;

}  // namespace guest

#endif  // GUEST_KERNEL_BOOT_H_
