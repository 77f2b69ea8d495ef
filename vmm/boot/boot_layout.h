// The guest-visible structures of the direct 64-bit boot (docs/design.md "Boot"), written
// into guest memory before the first instruction: identity page tables, the
// VMM-owned GDT, the TSS, boot_info and the command line. Pure functions over
// GuestMemory and a GDT span, so they are unit-tested without /dev/kvm.
#ifndef MINIVMM_VMM_BOOT_BOOT_LAYOUT_H_
#define MINIVMM_VMM_BOOT_BOOT_LAYOUT_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "minivmm/guest_memory.h"

namespace minivmm {

// The page size of the identity map, and so the unit of guest RAM.
inline constexpr uint64_t kTwoMiB = 2ull << 20;

// One GDT per vCPU (docs/design.md "GDT"): for each cpu < `cpus`, entries 0-9
// at MVMM_CPU_GDT_GPA(cpu), alike but for the TSS descriptor, which describes
// that CPU's TSS (MVMM_CPU_TSS_GPA(cpu)); every other byte of the page is
// zero. Present descriptors carry the accessed bit: the GDT is read-only to
// the guest, and a segment load whose descriptor lacks it never completes
// (docs/hosts.md). A block that does not fit in `gdt_page` is not written.
void WriteInitialGdt(std::span<uint8_t> gdt_page, uint32_t cpus);

// PML4 at MVMM_PAGE_TABLES_GPA, one PDPT, and 2 MiB pages mapping
// [0, RAM size rounded up to 2 MiB) and the GDT page's 2 MiB region
// identity. Returns the CR3 value; InvalidArgument when RAM is smaller than
// MVMM_PAGE_TABLES_END or larger than MVMM_MEMORY_MAX.
absl::StatusOr<uint64_t> WriteIdentityPageTables(const GuestMemory& memory);

// One TSS per vCPU, CPU n's at MVMM_CPU_TSS_GPA(n): rsp0 = 0 until the guest
// sets it, no I/O bitmap. OutOfRange when RAM does not hold them.
absl::Status WriteTss(const GuestMemory& memory, uint32_t cpus = 1);

struct BootInfoParams {
  std::string_view cmdline;  // at most MVMM_CMDLINE_MAX bytes
  uint64_t first_free_gpa;   // end of the loaded image
  uint32_t timer_hz;
  uint32_t nr_cpus = 1;
};
// boot_info at MVMM_BOOT_INFO_GPA and the NUL-terminated command line at
// MVMM_CMDLINE_GPA. InvalidArgument when the command line is too long,
// OutOfRange when RAM does not hold them.
absl::Status WriteBootInfo(const GuestMemory& memory, const BootInfoParams& params);

}  // namespace minivmm

#endif  // MINIVMM_VMM_BOOT_BOOT_LAYOUT_H_
