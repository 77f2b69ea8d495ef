/* A guest of your own in one file (docs/own-guest.md): everything a
 * freestanding test guest includes. Built with minivmm_add_guest() from the
 * installed CMake package, which links the entry stub and the linker script.
 *
 * The entry stub (_start) calls
 *
 *   int mvmm_guest_main(const struct mvmm_boot_info* boot, uint32_t cpu);
 *
 * on every vCPU, each on its own stack, and shuts the VM down with its
 * return value (sched_op(shutdown, value): 0..255). The vCPU state at that
 * call is the VMM's boot state (docs/design.md "Boot"): 64-bit mode, CPL 0,
 * interrupts off, all RAM identity mapped; `boot` is boot_info at
 * MVMM_BOOT_INFO_GPA, `cpu` the vCPU's number (0 the boot CPU; with
 * `--cpus N` all N vCPUs enter at once). */
#ifndef MINIVMM_GUEST_GUEST_H_
#define MINIVMM_GUEST_GUEST_H_

#include <stdint.h>

#include "minivmm_abi/boot.h"
#include "minivmm_abi/hypercall.h"
#include "minivmm_guest/hypercall.h"
#include "minivmm_guest/report.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Defined by the guest; called by the entry stub. */
int mvmm_guest_main(const struct mvmm_boot_info* boot, uint32_t cpu);
#ifdef __cplusplus
}
#endif

#endif /* MINIVMM_GUEST_GUEST_H_ */
