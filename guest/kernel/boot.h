// What the kernel learned at boot, read-only after KernelMain's set-up.
#ifndef GUEST_KERNEL_BOOT_H_
#define GUEST_KERNEL_BOOT_H_

#include <stdint.h>

#include "lib/cmdline.h"
#include "minivmm_abi/boot.h"

namespace guest {

struct BootState {
  bool under_minivmm = false;  // entered through the 64-bit boot with boot_info
  bool ring3_nm = false;       // ring-3 SSE with CR0.TS=1 raises #NM on this host
  uint64_t patched_sites = 0;  // pte_flags call sites rewritten at boot
  uint64_t memory_size = 0;
  uint64_t gdt_gpa = 0;
  mvmm_tss* tss = nullptr;
  uint64_t first_free = 0;
  uint32_t timer_hz = 0;
  uint64_t vcpu_info_gpa = 0;  // boot_info's; 0 under the PVH entry
  Config config = {};
};
extern BootState g_boot;

// The boot sequence shared by the minivmm entry (KernelMain) and the PVH
// entry (KernelMainPvh), once g_boot describes the machine.
[[noreturn]] void KernelRun(StrView cmdline);

}  // namespace guest

#endif  // GUEST_KERNEL_BOOT_H_
