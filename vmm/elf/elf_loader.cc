#include "vmm/elf/elf_loader.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "minivmm_abi/boot.h"
#include "vmm/elf/elf_notes.h"
#include "vmm/elf/file_bytes.h"

namespace minivmm {
namespace {

constexpr uint64_t kPageSize = 4096;

template <typename... Args>
absl::Status Malformed(const absl::FormatSpec<Args...>& format, const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat("ELF: ", absl::StrFormat(format, args...)));
}

absl::StatusOr<Elf64_Ehdr> ValidateHeader(std::span<const uint8_t> file) {
  if (file.size() < sizeof(Elf64_Ehdr)) {
    return Malformed("file of %d bytes is shorter than the ELF64 header (%d bytes)", file.size(),
                     sizeof(Elf64_Ehdr));
  }
  const auto ehdr = CopyFromFile<Elf64_Ehdr>(file, 0);
  if (std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0) return Malformed("bad magic in e_ident");
  if (ehdr.e_ident[EI_CLASS] != ELFCLASS64) {
    return Malformed("e_ident[EI_CLASS] is %d, want ELFCLASS64", ehdr.e_ident[EI_CLASS]);
  }
  if (ehdr.e_ident[EI_DATA] != ELFDATA2LSB) {
    return Malformed("e_ident[EI_DATA] is %d, want ELFDATA2LSB (little-endian)",
                     ehdr.e_ident[EI_DATA]);
  }
  if (ehdr.e_ident[EI_VERSION] != EV_CURRENT || ehdr.e_version != EV_CURRENT) {
    return Malformed("e_ident[EI_VERSION] / e_version is not EV_CURRENT");
  }
  if (ehdr.e_type != ET_EXEC) {
    return Malformed("e_type is %d, want ET_EXEC (a static, non-PIE executable)", ehdr.e_type);
  }
  if (ehdr.e_machine != EM_X86_64) {
    return Malformed("e_machine is %d, want EM_X86_64", ehdr.e_machine);
  }
  if (ehdr.e_phentsize != sizeof(Elf64_Phdr)) {
    return Malformed("e_phentsize is %d, want %d", ehdr.e_phentsize, sizeof(Elf64_Phdr));
  }
  if (ehdr.e_phnum == PN_XNUM) return Malformed("e_phnum is PN_XNUM (extended numbering)");
  if (!InsideFile(ehdr.e_phoff, uint64_t{ehdr.e_phnum} * ehdr.e_phentsize, file.size())) {
    return Malformed("program header table (e_phoff 0x%x, e_phnum %d) runs past the file end 0x%x",
                     ehdr.e_phoff, ehdr.e_phnum, file.size());
  }
  return ehdr;
}

std::vector<Elf64_Phdr> ProgramHeaders(std::span<const uint8_t> file, const Elf64_Ehdr& ehdr) {
  std::vector<Elf64_Phdr> phdrs(ehdr.e_phnum);
  for (size_t i = 0; i < phdrs.size(); ++i) {
    phdrs[i] = CopyFromFile<Elf64_Phdr>(file, ehdr.e_phoff + i * sizeof(Elf64_Phdr));
  }
  return phdrs;
}

// Per-segment checks for PT_LOAD number `i`.
absl::Status ValidateLoad(int i, const Elf64_Phdr& ph, uint64_t file_size,
                          const GuestMemory& memory) {
  if (!InsideFile(ph.p_offset, ph.p_filesz, file_size)) {
    return Malformed("PT_LOAD %d: p_offset 0x%x + p_filesz 0x%x runs past the file end 0x%x", i,
                     ph.p_offset, ph.p_filesz, file_size);
  }
  if (ph.p_filesz > ph.p_memsz) {
    return Malformed("PT_LOAD %d: p_filesz 0x%x is larger than p_memsz 0x%x", i, ph.p_filesz,
                     ph.p_memsz);
  }
  if (ph.p_memsz == 0) return absl::OkStatus();  // loads nothing; placement is moot
  if (ph.p_paddr < MVMM_KERNEL_MIN_GPA) {
    return absl::OutOfRangeError(
        absl::StrFormat("ELF: PT_LOAD %d: p_paddr 0x%x is below the kernel minimum 0x%x", i,
                        ph.p_paddr, MVMM_KERNEL_MIN_GPA));
  }
  if (ph.p_memsz > UINT64_MAX - ph.p_paddr) {
    return Malformed("PT_LOAD %d: p_paddr 0x%x + p_memsz 0x%x overflows", i, ph.p_paddr,
                     ph.p_memsz);
  }
  if (!memory.Contains(GuestAddress(ph.p_paddr), ph.p_memsz)) {
    return absl::OutOfRangeError(absl::StrFormat(
        "ELF: PT_LOAD %d: [p_paddr 0x%x, + p_memsz 0x%x) is outside guest RAM of 0x%x bytes", i,
        ph.p_paddr, ph.p_memsz, memory.size()));
  }
  return absl::OkStatus();
}

absl::Status ValidateNoOverlap(const std::vector<Elf64_Phdr>& phdrs) {
  struct Span {
    uint64_t start, end;
    size_t index;
  };
  std::vector<Span> spans;
  for (size_t i = 0; i < phdrs.size(); ++i) {
    const Elf64_Phdr& ph = phdrs[i];
    if (ph.p_type == PT_LOAD && ph.p_memsz > 0) {
      spans.push_back({ph.p_paddr, ph.p_paddr + ph.p_memsz, i});
    }
  }
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.start < b.start; });
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i - 1].end > spans[i].start) {
      return Malformed("program headers %d and %d: PT_LOAD physical ranges overlap at 0x%x",
                       spans[i - 1].index, spans[i].index, spans[i].start);
    }
  }
  return absl::OkStatus();
}

// The executable PT_LOAD holding e_entry, by virtual address.
absl::StatusOr<uint64_t> EntryGpa(const Elf64_Ehdr& ehdr, const std::vector<Elf64_Phdr>& phdrs) {
  for (const Elf64_Phdr& ph : phdrs) {
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    if (ehdr.e_entry >= ph.p_vaddr && ehdr.e_entry - ph.p_vaddr < ph.p_memsz) {
      return ph.p_paddr + (ehdr.e_entry - ph.p_vaddr);
    }
  }
  return Malformed("e_entry 0x%x is not inside any executable PT_LOAD", ehdr.e_entry);
}

}  // namespace

absl::StatusOr<LoadedImage> LoadElf(std::span<const uint8_t> file, const GuestMemory& memory) {
  absl::StatusOr<Elf64_Ehdr> ehdr = ValidateHeader(file);
  if (!ehdr.ok()) return ehdr.status();
  const std::vector<Elf64_Phdr> phdrs = ProgramHeaders(file, *ehdr);

  LoadedImage image;
  image.lowest_gpa = UINT64_MAX;
  for (size_t i = 0; i < phdrs.size(); ++i) {
    const Elf64_Phdr& ph = phdrs[i];
    if (ph.p_type != PT_LOAD) continue;
    if (absl::Status s = ValidateLoad(static_cast<int>(i), ph, file.size(), memory); !s.ok()) {
      return s;
    }
    if (ph.p_memsz == 0) continue;
    image.lowest_gpa = std::min(image.lowest_gpa, ph.p_paddr);
    image.end_gpa = std::max(image.end_gpa, ph.p_paddr + ph.p_memsz);
  }
  if (image.end_gpa == 0) return Malformed("no non-empty PT_LOAD segment");
  if (absl::Status s = ValidateNoOverlap(phdrs); !s.ok()) return s;
  absl::StatusOr<uint64_t> entry_gpa = EntryGpa(*ehdr, phdrs);
  if (!entry_gpa.ok()) return entry_gpa.status();
  absl::StatusOr<std::optional<uint64_t>> pvh = FindPvhEntry(file, phdrs);
  if (!pvh.ok()) return pvh.status();

  image.entry = ehdr->e_entry;
  image.entry_gpa = *entry_gpa;
  // No overflow: end_gpa lies inside RAM, which is far below 2^64 - 4 KiB.
  image.end_gpa = (image.end_gpa + kPageSize - 1) & ~(kPageSize - 1);
  image.pvh_entry = *pvh;

  // Everything is valid: now, and only now, touch guest memory.
  for (const Elf64_Phdr& ph : phdrs) {
    if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
    // Cannot fail: ValidateLoad found [p_paddr, + p_memsz) inside RAM.
    if (!LoadSegment(memory, GuestAddress(ph.p_paddr), file.subspan(ph.p_offset, ph.p_filesz),
                     ph.p_memsz)) {
      return absl::OutOfRangeError("ELF: a validated PT_LOAD no longer fits in guest RAM");
    }
  }
  return image;
}

absl::StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};

  struct stat st;
  if (fstat(fd, &st) != 0) return absl::ErrnoToStatus(errno, absl::StrCat("fstat ", path));
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(path + " is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > MVMM_MEMORY_MAX) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is %d bytes, larger than any guest RAM (0x%x)", path, st.st_size, MVMM_MEMORY_MAX));
  }

  std::vector<uint8_t> data(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = read(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, absl::StrCat("read ", path));
    if (n == 0) break;  // the file shrank under us: keep what is there
    done += static_cast<size_t>(n);
  }
  data.resize(done);
  return data;
}

}  // namespace minivmm
