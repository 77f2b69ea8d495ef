#include "vmm/boot/multiboot.h"

#include <elf.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "vmm/elf/file_bytes.h"

namespace minivmm {
namespace {

constexpr uint64_t kMultibootPage = 4096;

template <typename... Args>
absl::Status MultibootMalformed(const absl::FormatSpec<Args...>& format, const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat("Multiboot: ", absl::StrFormat(format, args...)));
}

uint64_t PageUp(uint64_t value) { return (value + kMultibootPage - 1) & ~(kMultibootPage - 1); }

// One range to load, from ELF or from the header's addresses; the names say
// which fields to blame in a message.
struct LoadRange {
  std::string where;      // "PT_LOAD 2" or "header"
  const char* gpa_field;  // "p_paddr" or "load_addr"
  uint64_t file_offset, filesz, gpa, memsz;
};

absl::Status ValidatePlacement(const LoadRange& r, const GuestMemory& memory) {
  const bool in_low_ram = r.gpa >= kMultibootLowLoadGpa && r.gpa < kMultibootLowRamEnd &&
                          r.memsz <= kMultibootLowRamEnd - r.gpa;
  if (r.gpa < kMultibootMinLoadGpa && !in_low_ram) {
    return MultibootMalformed(
        "%s: [%s 0x%x, + 0x%x) is below 1 MiB (0x%x) and not inside low RAM [0x%x, 0x%x)",
        r.where, r.gpa_field, r.gpa, r.memsz, kMultibootMinLoadGpa, kMultibootLowLoadGpa,
        kMultibootLowRamEnd);
  }
  if (r.memsz > kMultibootMaxGpa || r.gpa > kMultibootMaxGpa - r.memsz) {
    return MultibootMalformed("%s: [%s 0x%x, + 0x%x) ends above 4 GiB", r.where, r.gpa_field, r.gpa,
                              r.memsz);
  }
  if (!memory.Contains(GuestAddress(r.gpa), r.memsz)) {
    return absl::OutOfRangeError(
        absl::StrFormat("Multiboot: %s: [%s 0x%x, + 0x%x) is outside guest RAM of 0x%x bytes",
                        r.where, r.gpa_field, r.gpa, r.memsz, memory.size()));
  }
  return absl::OkStatus();
}

absl::Status CheckRangesDisjoint(std::vector<LoadRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const LoadRange& a, const LoadRange& b) { return a.gpa < b.gpa; });
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i - 1].gpa + ranges[i - 1].memsz > ranges[i].gpa) {
      return MultibootMalformed("%s and %s: physical ranges overlap at 0x%x", ranges[i - 1].where,
                                ranges[i].where, ranges[i].gpa);
    }
  }
  return absl::OkStatus();
}

// What an image loads (its non-empty PT_LOADs, or the one range of the
// header's addresses) and the entry's physical address.
struct LoadPlan {
  std::vector<LoadRange> ranges;
  uint64_t entry_gpa = 0;
};

// The ELF32 and ELF64 paths differ only in their structs and e_machine.
template <typename Ehdr, typename Phdr>
absl::StatusOr<LoadPlan> PlanElf(std::span<const uint8_t> file, uint16_t machine,
                                 const char* class_name) {
  if (file.size() < sizeof(Ehdr)) {
    return MultibootMalformed("file of %d bytes is shorter than the %s header (%d bytes)",
                              file.size(), class_name, sizeof(Ehdr));
  }
  const auto ehdr = CopyFromFile<Ehdr>(file, 0);
  if (ehdr.e_ident[EI_DATA] != ELFDATA2LSB) {
    return MultibootMalformed("e_ident[EI_DATA] is %d, want ELFDATA2LSB", ehdr.e_ident[EI_DATA]);
  }
  if (ehdr.e_ident[EI_VERSION] != EV_CURRENT || ehdr.e_version != EV_CURRENT) {
    return MultibootMalformed("e_ident[EI_VERSION] / e_version is not EV_CURRENT");
  }
  if (ehdr.e_type != ET_EXEC) return MultibootMalformed("e_type is %d, want ET_EXEC", ehdr.e_type);
  if (ehdr.e_machine != machine) {
    return MultibootMalformed("e_machine is %d, want %d for %s", ehdr.e_machine, machine,
                              class_name);
  }
  if (ehdr.e_phentsize != sizeof(Phdr)) {
    return MultibootMalformed("e_phentsize is %d, want %d", ehdr.e_phentsize, sizeof(Phdr));
  }
  if (!InsideFile(ehdr.e_phoff, uint64_t{ehdr.e_phnum} * sizeof(Phdr), file.size())) {
    return MultibootMalformed(
        "program header table (e_phoff 0x%x, e_phnum %d) runs past the file end 0x%x", ehdr.e_phoff,
        ehdr.e_phnum, file.size());
  }
  LoadPlan plan;
  std::optional<uint64_t> entry_gpa;
  for (uint64_t i = 0; i < ehdr.e_phnum; ++i) {
    const auto ph = CopyFromFile<Phdr>(file, ehdr.e_phoff + i * sizeof(Phdr));
    if (ph.p_type != PT_LOAD) continue;
    if (!InsideFile(ph.p_offset, ph.p_filesz, file.size())) {
      return MultibootMalformed(
          "PT_LOAD %d: p_offset 0x%x + p_filesz 0x%x runs past the file end 0x%x", i, ph.p_offset,
          ph.p_filesz, file.size());
    }
    if (ph.p_filesz > ph.p_memsz) {
      return MultibootMalformed("PT_LOAD %d: p_filesz 0x%x is larger than p_memsz 0x%x", i,
                                ph.p_filesz, ph.p_memsz);
    }
    if (ph.p_memsz == 0) continue;  // loads nothing; placement is moot
    if (!entry_gpa && ehdr.e_entry >= ph.p_vaddr && ehdr.e_entry - ph.p_vaddr < ph.p_memsz) {
      entry_gpa = uint64_t{ph.p_paddr} + (ehdr.e_entry - ph.p_vaddr);
    }
    plan.ranges.push_back(
        {absl::StrCat("PT_LOAD ", i), "p_paddr", ph.p_offset, ph.p_filesz, ph.p_paddr, ph.p_memsz});
  }
  if (plan.ranges.empty()) return MultibootMalformed("no non-empty PT_LOAD segment");
  if (!entry_gpa) {
    return MultibootMalformed("e_entry 0x%x is not inside any PT_LOAD", ehdr.e_entry);
  }
  plan.entry_gpa = *entry_gpa;
  return plan;
}

absl::StatusOr<LoadPlan> PlanElfImage(std::span<const uint8_t> file) {
  if (file.size() <= EI_CLASS) {
    return MultibootMalformed("file of %d bytes is shorter than e_ident", file.size());
  }
  switch (file[EI_CLASS]) {
    case ELFCLASS32:
      return PlanElf<Elf32_Ehdr, Elf32_Phdr>(file, EM_386, "ELF32");
    case ELFCLASS64:
      return PlanElf<Elf64_Ehdr, Elf64_Phdr>(file, EM_X86_64, "ELF64");
    default:
      return MultibootMalformed("e_ident[EI_CLASS] is %d, want ELFCLASS32 or ELFCLASS64",
                                file[EI_CLASS]);
  }
}

// The "a.out kludge": one range given by the header's addresses.
absl::StatusOr<LoadPlan> PlanAddresses(std::span<const uint8_t> file,
                                       const MultibootHeader& header) {
  if (!header.addresses) {
    return MultibootMalformed("not an ELF file, and the header has no addresses (flag 16)");
  }
  const MultibootAddresses& a = *header.addresses;
  if (a.header_addr < a.load_addr) {
    return MultibootMalformed("header_addr 0x%x is below load_addr 0x%x", a.header_addr,
                              a.load_addr);
  }
  if (a.header_addr - a.load_addr > header.offset) {
    return MultibootMalformed(
        "load_addr 0x%x is 0x%x bytes before header_addr, more than the header's file offset 0x%x",
        a.load_addr, a.header_addr - a.load_addr, header.offset);
  }
  const uint64_t file_offset = header.offset - (a.header_addr - a.load_addr);
  uint64_t filesz = file.size() - file_offset;
  if (a.load_end_addr != 0) {
    if (a.load_end_addr <= a.load_addr) {
      return MultibootMalformed("load_end_addr 0x%x is not above load_addr 0x%x", a.load_end_addr,
                                a.load_addr);
    }
    filesz = a.load_end_addr - a.load_addr;
    if (!InsideFile(file_offset, filesz, file.size())) {
      return MultibootMalformed(
          "load_end_addr 0x%x: 0x%x bytes from file offset 0x%x run past the file end 0x%x",
          a.load_end_addr, filesz, file_offset, file.size());
    }
  }
  uint64_t memsz = filesz;
  if (a.bss_end_addr != 0) {
    if (a.bss_end_addr < a.load_addr + filesz) {
      return MultibootMalformed("bss_end_addr 0x%x is below the loaded end 0x%x", a.bss_end_addr,
                                a.load_addr + filesz);
    }
    memsz = a.bss_end_addr - a.load_addr;
  }
  if (a.entry_addr < a.load_addr || a.entry_addr - a.load_addr >= memsz) {
    return MultibootMalformed("entry_addr 0x%x is outside [load_addr 0x%x, + 0x%x)", a.entry_addr,
                              a.load_addr, memsz);
  }
  LoadPlan plan;
  plan.ranges.push_back({"header", "load_addr", file_offset, filesz, a.load_addr, memsz});
  plan.entry_gpa = a.entry_addr;
  return plan;
}

bool IsElf(std::span<const uint8_t> file) {
  return file.size() >= SELFMAG && std::memcmp(file.data(), ELFMAG, SELFMAG) == 0;
}

// The fixed part of the map; the last entry's length is RAM above 1 MiB.
std::array<MultibootMmapEntry, 4> MemoryMap(uint64_t ram_size) {
  constexpr uint32_t kSize = sizeof(MultibootMmapEntry) - sizeof(uint32_t);
  return {{
      {kSize, 0, kMultibootLowRamEnd, kMultibootMemoryAvailable},
      {kSize, kMultibootLowRamEnd, kMultibootVgaStart - kMultibootLowRamEnd,
       kMultibootMemoryReserved},
      {kSize, kMultibootBiosStart, kMultibootMinLoadGpa - kMultibootBiosStart,
       kMultibootMemoryReserved},
      {kSize, kMultibootMinLoadGpa, ram_size - kMultibootMinLoadGpa, kMultibootMemoryAvailable},
  }};
}

// Where each module goes: page-aligned, one after another from after_gpa.
absl::StatusOr<std::vector<uint64_t>> PlaceModules(const MultibootInfoRequest& request,
                                                   const GuestMemory& memory) {
  if (request.after_gpa < kMultibootMinLoadGpa || request.after_gpa > kMultibootMaxGpa) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Multiboot: after_gpa 0x%x is outside [1 MiB, 4 GiB]", request.after_gpa));
  }
  std::vector<uint64_t> starts;
  uint64_t gpa = PageUp(request.after_gpa);
  for (size_t i = 0; i < request.modules.size(); ++i) {
    const uint64_t size = request.modules[i].data.size();
    if (gpa > kMultibootMaxGpa || size > kMultibootMaxGpa - gpa ||
        !memory.Contains(GuestAddress(gpa), size)) {
      return absl::OutOfRangeError(
          absl::StrFormat("Multiboot: module %d (0x%x bytes at 0x%x) does not fit in guest RAM of "
                          "0x%x bytes below 4 GiB",
                          i, size, gpa, memory.size()));
    }
    starts.push_back(gpa);
    gpa = PageUp(gpa + size);
  }
  return starts;
}

// Appends `len` bytes at `data` to the info area's image, which starts at
// `start`; returns their guest address (below 640 KiB, so 32 bits).
uint32_t AppendToArea(std::vector<uint8_t>& area, uint64_t start, const void* data, size_t len) {
  const uint64_t gpa = start + area.size();
  const auto* bytes = static_cast<const uint8_t*>(data);
  area.insert(area.end(), bytes, bytes + len);
  return static_cast<uint32_t>(gpa);
}

uint32_t AppendString(std::vector<uint8_t>& area, uint64_t start, const std::string& s) {
  return AppendToArea(area, start, s.c_str(), s.size() + 1);  // with its NUL
}

}  // namespace

absl::StatusOr<MultibootHeader> FindMultibootHeader(std::span<const uint8_t> file) {
  const uint64_t search_end = std::min<uint64_t>(file.size(), kMultibootSearchBytes);
  for (uint64_t offset = 0; offset + 4 <= search_end; offset += kMultibootHeaderAlign) {
    if (CopyFromFile<uint32_t>(file, offset) != kMultibootHeaderMagic) continue;
    if (!InsideFile(offset, kMultibootHeaderSize, file.size())) {
      return MultibootMalformed(
          "header at offset 0x%x: flags and checksum run past the file end 0x%x", offset,
          file.size());
    }
    const auto flags = CopyFromFile<uint32_t>(file, offset + 4);
    const auto checksum = CopyFromFile<uint32_t>(file, offset + 8);
    if (static_cast<uint32_t>(kMultibootHeaderMagic + flags + checksum) != 0) continue;

    MultibootHeader header;
    header.offset = offset;
    header.flags = flags;
    const uint32_t unsupported = flags & kMultibootRequiredFlags & ~kMultibootSupportedFlags;
    if (unsupported != 0) {
      return MultibootMalformed(
          "header flags 0x%x: required bits 0x%x are not supported%s", flags, unsupported,
          (unsupported & kMultibootFlagVideo) ? " (bit 2, a video mode)" : "");
    }
    if (flags & kMultibootFlagAddresses) {
      if (!InsideFile(offset, kMultibootAddressesHeaderSize, file.size())) {
        return MultibootMalformed(
            "header at offset 0x%x: flag 16's addresses run past the file end 0x%x", offset,
            file.size());
      }
      header.addresses = CopyFromFile<MultibootAddresses>(file, offset + kMultibootHeaderSize);
    }
    return header;
  }
  return MultibootMalformed("no header (magic 0x%x with a valid checksum) in the first %d bytes",
                            kMultibootHeaderMagic, kMultibootSearchBytes);
}

absl::StatusOr<MultibootImage> LoadMultiboot(std::span<const uint8_t> file,
                                             const GuestMemory& memory) {
  // An ELF file is checked as ELF first, so that its own faults are named.
  std::optional<absl::StatusOr<LoadPlan>> elf;
  if (IsElf(file)) elf = PlanElfImage(file);
  if (elf && !elf->ok()) return elf->status();
  absl::StatusOr<MultibootHeader> header = FindMultibootHeader(file);
  if (!header.ok()) return header.status();
  absl::StatusOr<LoadPlan> plan = elf ? std::move(*elf) : PlanAddresses(file, *header);
  if (!plan.ok()) return plan.status();

  for (const LoadRange& r : plan->ranges) {
    if (absl::Status s = ValidatePlacement(r, memory); !s.ok()) return s;
  }
  if (absl::Status s = CheckRangesDisjoint(plan->ranges); !s.ok()) return s;

  // The entry lies inside a range just found below 4 GiB, so it fits 32 bits.
  MultibootImage image{
      .entry = static_cast<uint32_t>(plan->entry_gpa), .lowest_gpa = UINT64_MAX, .header = *header};
  for (const LoadRange& r : plan->ranges) {
    image.lowest_gpa = std::min(image.lowest_gpa, r.gpa);
    image.end_gpa = std::max(image.end_gpa, PageUp(r.gpa + r.memsz));
    if (r.gpa < kMultibootMinLoadGpa)
      image.low_end_gpa = std::max(image.low_end_gpa, PageUp(r.gpa + r.memsz));
  }
  // Everything is valid: now, and only now, touch guest memory.
  for (const LoadRange& r : plan->ranges) {
    // Cannot fail: ValidatePlacement found [gpa, + memsz) inside RAM.
    if (!LoadSegment(memory, GuestAddress(r.gpa), file.subspan(r.file_offset, r.filesz), r.memsz)) {
      return absl::InternalError("Multiboot: a validated range no longer fits in guest RAM");
    }
  }
  return image;
}

absl::StatusOr<uint32_t> WriteMultibootInfo(const MultibootInfoRequest& request,
                                            const GuestMemory& memory) {
  if (memory.size() <= kMultibootMinLoadGpa) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "Multiboot: guest RAM of 0x%x bytes ends at or below 1 MiB", memory.size()));
  }
  const std::array<MultibootMmapEntry, 4> mmap = MemoryMap(memory.size());
  uint64_t needed = sizeof(MultibootInfo) + sizeof(mmap) +
                    request.modules.size() * sizeof(MultibootModuleEntry) + request.cmdline.size() +
                    1;
  for (const MultibootModule& m : request.modules) needed += m.string.size() + 1;
  // After an image in low RAM, if it reaches past the usual start.
  const uint64_t start = std::max(kMultibootInfoAreaStart, PageUp(request.low_image_end));
  const uint64_t area_size = start < kMultibootInfoAreaEnd ? kMultibootInfoAreaEnd - start : 0;
  if (needed > area_size) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("Multiboot: the information structure, command line (%d bytes), %d modules "
                        "and their strings need 0x%x bytes, more than the info area's 0x%x",
                        request.cmdline.size(), request.modules.size(), needed, area_size));
  }
  absl::StatusOr<std::vector<uint64_t>> starts = PlaceModules(request, memory);
  if (!starts.ok()) return starts.status();

  // The whole info area's image, built in host memory and written at once.
  std::vector<uint8_t> area(sizeof(MultibootInfo));
  MultibootInfo info{};
  info.flags =
      kMultibootInfoMemory | kMultibootInfoCmdline | kMultibootInfoMods | kMultibootInfoMmap;
  info.mem_lower = kMultibootLowRamEnd / 1024;
  // Fits 32 bits: KiB of a RAM far below 4 TiB.
  info.mem_upper = static_cast<uint32_t>((memory.size() - kMultibootMinLoadGpa) / 1024);
  info.mmap_addr = AppendToArea(area, start, mmap.data(), sizeof(mmap));
  info.mmap_length = sizeof(mmap);
  std::vector<MultibootModuleEntry> mods(request.modules.size());
  info.mods_addr =
      AppendToArea(area, start, mods.data(), mods.size() * sizeof(MultibootModuleEntry));
  info.mods_count = static_cast<uint32_t>(mods.size());
  info.cmdline = AppendString(area, start, request.cmdline);
  for (size_t i = 0; i < mods.size(); ++i) {
    // Below 4 GiB: PlaceModules checked every module's end.
    mods[i].mod_start = static_cast<uint32_t>((*starts)[i]);
    mods[i].mod_end = static_cast<uint32_t>((*starts)[i] + request.modules[i].data.size());
    mods[i].string = AppendString(area, start, request.modules[i].string);
  }
  // Safety: both copies land inside `area`, sized above for the struct and
  // the module list.
  std::memcpy(area.data(), &info, sizeof(info));
  if (!mods.empty()) {
    std::memcpy(area.data() + (info.mods_addr - start), mods.data(),
                mods.size() * sizeof(MultibootModuleEntry));
  }

  // Everything fits: now, and only now, touch guest memory.
  if (!memory.Write(GuestAddress(start), std::span<const uint8_t>(area))) {
    return absl::OutOfRangeError(absl::StrFormat(
        "Multiboot: the info area [0x%x, 0x%x) is outside guest RAM", start, start + area.size()));
  }
  for (size_t i = 0; i < mods.size(); ++i) {
    // Cannot fail: PlaceModules found each module inside RAM.
    if (!memory.Write(GuestAddress((*starts)[i]), request.modules[i].data)) {
      return absl::InternalError("Multiboot: a placed module no longer fits in guest RAM");
    }
  }
  return static_cast<uint32_t>(start);
}

}  // namespace minivmm
