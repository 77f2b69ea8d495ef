// ELF note parsing for the loader (internal to vmm/elf): finds the PVH entry
// point, XEN_ELFNOTE_PHYS32_ENTRY, that lets QEMU boot the image with -kernel.
#ifndef MINIVMM_VMM_ELF_ELF_NOTES_H_
#define MINIVMM_VMM_ELF_ELF_NOTES_H_

#include <elf.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"

namespace minivmm {

// Walks every PT_NOTE of `file` (untrusted; `phdrs` already read from it) and
// returns the value of the first "Xen" note of type 18 (4- or 8-byte
// descriptor), or nullopt when there is none. The entry must lie inside the
// physical range of a PT_LOAD in `phdrs`.
// Errors: InvalidArgument for a PT_NOTE outside the file, a note whose name or
// descriptor runs past its segment, a PVH note with a descriptor that is not
// 4 or 8 bytes, or a PVH entry outside every PT_LOAD.
absl::StatusOr<std::optional<uint64_t>> FindPvhEntry(std::span<const uint8_t> file,
                                                     const std::vector<Elf64_Phdr>& phdrs);

}  // namespace minivmm

#endif  // MINIVMM_VMM_ELF_ELF_NOTES_H_
