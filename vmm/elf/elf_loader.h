// A validating loader for the guest image: a static ELF64 x86-64 executable
// whose PT_LOAD segments are copied to guest-physical memory at p_paddr (at
// or above MVMM_KERNEL_MIN_GPA). The file is untrusted input: every field is
// checked, with overflow, before anything is written, so a refused image
// leaves guest memory exactly as it was.
#ifndef MINIVMM_VMM_ELF_ELF_LOADER_H_
#define MINIVMM_VMM_ELF_ELF_LOADER_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "minivmm/guest_memory.h"

namespace minivmm {

struct LoadedImage {
  uint64_t entry = 0;       // e_entry, a virtual address (what RIP starts at)
  uint64_t entry_gpa = 0;   // e_entry translated through its segment (p_paddr - p_vaddr);
                            // equal to `entry` for identity-linked images like ours
  uint64_t lowest_gpa = 0;  // lowest p_paddr of a non-empty PT_LOAD
  uint64_t end_gpa = 0;     // highest p_paddr + p_memsz, rounded up to 4 KiB
  // XEN_ELFNOTE_PHYS32_ENTRY from a PT_NOTE ("Xen" note, type 18): the 32-bit
  // PVH entry QEMU uses with -kernel. Absent when the image has none.
  std::optional<uint64_t> pvh_entry;
};

// Validates `file` and loads it into `memory`: copies each PT_LOAD's p_filesz
// bytes to p_paddr and zeroes the rest up to p_memsz (the bss).
// Checks, in order: the ELF header (size, magic, ELFCLASS64, ELFDATA2LSB,
// EV_CURRENT, ET_EXEC, EM_X86_64, e_phentsize), the program header table
// inside the file, then every PT_LOAD (p_offset + p_filesz inside the file,
// p_filesz <= p_memsz, p_paddr >= MVMM_KERNEL_MIN_GPA, no overflow, no two
// overlapping), at least one PT_LOAD, e_entry inside an executable
// (PF_X) PT_LOAD, and well-formed PT_NOTE segments.
// Errors: InvalidArgument for a malformed image, OutOfRange for a segment
// that does not fit in guest RAM; each message names the offending field.
// Nothing is written to `memory` unless the whole image is valid.
absl::StatusOr<LoadedImage> LoadElf(std::span<const uint8_t> file, const GuestMemory& memory);

// Reads a whole regular file. Errors carry the path and errno text: NotFound,
// PermissionDenied (and the other codes of absl::ErrnoToStatus);
// InvalidArgument for something that is not a regular file or is larger than
// MVMM_MEMORY_MAX (no guest image can be).
absl::StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path);

}  // namespace minivmm

#endif  // MINIVMM_VMM_ELF_ELF_LOADER_H_
