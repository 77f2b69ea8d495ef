#include "vmm/elf/elf_notes.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace minivmm {
namespace {

constexpr uint32_t kXenElfnotePhys32Entry = 18;  // XEN_ELFNOTE_PHYS32_ENTRY
constexpr char kXenName[] = "Xen";               // namesz 4, with the NUL

uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

struct Note {
  uint32_t type;
  std::span<const uint8_t> name;  // namesz bytes, NUL included
  std::span<const uint8_t> desc;
};

// Parses the note at `pos` of `seg`; returns the position of the next one.
absl::StatusOr<uint64_t> ParseNote(std::span<const uint8_t> seg, uint64_t pos, uint64_t align,
                                   size_t phdr_index, Note& note) {
  Elf64_Nhdr nhdr;
  // Safety: the caller checked a whole Elf64_Nhdr (a POD) is left at `pos` in `seg`.
  std::memcpy(&nhdr, seg.data() + pos, sizeof(nhdr));
  // namesz and descsz are 32-bit, so none of these sums can overflow 64 bits.
  const uint64_t name_pos = pos + sizeof(nhdr);
  const uint64_t desc_pos = AlignUp(name_pos + nhdr.n_namesz, align);
  const uint64_t desc_end = desc_pos + nhdr.n_descsz;
  if (desc_end > seg.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ELF: PT_NOTE (program header %d): note at 0x%x with n_namesz %d, n_descsz %d runs past "
        "its p_filesz 0x%x",
        phdr_index, pos, nhdr.n_namesz, nhdr.n_descsz, seg.size()));
  }
  note =
      Note{nhdr.n_type, seg.subspan(name_pos, nhdr.n_namesz), seg.subspan(desc_pos, nhdr.n_descsz)};
  return AlignUp(desc_end, align);
}

bool IsPvhNote(const Note& note) {
  return note.type == kXenElfnotePhys32Entry && note.name.size() == sizeof(kXenName) &&
         std::memcmp(note.name.data(), kXenName, sizeof(kXenName)) == 0;
}

}  // namespace

absl::StatusOr<std::optional<uint64_t>> FindPvhEntry(std::span<const uint8_t> file,
                                                     const std::vector<Elf64_Phdr>& phdrs) {
  std::optional<uint64_t> entry;
  for (size_t i = 0; i < phdrs.size() && !entry; ++i) {
    const Elf64_Phdr& ph = phdrs[i];
    if (ph.p_type != PT_NOTE) continue;
    if (ph.p_offset > file.size() || ph.p_filesz > file.size() - ph.p_offset) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "ELF: PT_NOTE (program header %d): p_offset 0x%x + p_filesz 0x%x runs past the file end",
          i, ph.p_offset, ph.p_filesz));
    }
    // gABI: 8-byte alignment for notes in an 8-aligned segment, else 4 (the
    // common case, and what Linux and GNU ld emit).
    const uint64_t align = ph.p_align == 8 ? 8 : 4;
    const std::span<const uint8_t> seg = file.subspan(ph.p_offset, ph.p_filesz);
    for (uint64_t pos = 0; pos + sizeof(Elf64_Nhdr) <= seg.size();) {
      Note note;
      absl::StatusOr<uint64_t> next = ParseNote(seg, pos, align, i, note);
      if (!next.ok()) return next.status();
      pos = *next;
      if (!IsPvhNote(note)) continue;
      if (note.desc.size() == 4) {
        uint32_t value;
        // Safety: desc.size() == 4 was checked just above; u32 is trivially copyable.
        std::memcpy(&value, note.desc.data(), 4);
        entry = value;
      } else if (note.desc.size() == 8) {
        uint64_t value;
        // Safety: desc.size() == 8 was checked just above; u64 is trivially copyable.
        std::memcpy(&value, note.desc.data(), 8);
        entry = value;
      } else {
        return absl::InvalidArgumentError(absl::StrFormat(
            "ELF: XEN_ELFNOTE_PHYS32_ENTRY n_descsz is %d, want 4 or 8", note.desc.size()));
      }
      break;
    }
  }
  if (!entry) return entry;
  for (const Elf64_Phdr& ph : phdrs) {
    if (ph.p_type == PT_LOAD && *entry >= ph.p_paddr && *entry - ph.p_paddr < ph.p_memsz) {
      return entry;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("ELF: XEN_ELFNOTE_PHYS32_ENTRY 0x%x is not inside any PT_LOAD", *entry));
}

}  // namespace minivmm
