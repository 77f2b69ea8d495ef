// A validating loader for Multiboot-1 images (Multiboot Specification 0.6.96)
// and the writer of the Multiboot information structure, for a machine that
// enters such an image in 32-bit protected mode with EAX = kMultibootBootMagic
// and EBX = the information structure's address (as QEMU's -kernel does).
// The image file is untrusted input: every field is checked, with overflow,
// before anything is written, so a refused image leaves guest memory exactly
// as it was. docs/design.md, "Multiboot images", has the layout.
#ifndef MINIVMM_VMM_BOOT_MULTIBOOT_H_
#define MINIVMM_VMM_BOOT_MULTIBOOT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "minivmm/guest_memory.h"

namespace minivmm {

// The header: magic, flags, checksum (magic + flags + checksum == 0 mod 2^32),
// then with kMultibootFlagAddresses five u32 addresses, then with
// kMultibootFlagVideo four u32 video fields.
inline constexpr uint32_t kMultibootHeaderMagic = 0x1BADB002;
inline constexpr uint32_t kMultibootBootMagic = 0x2BADB002;  // EAX at entry
inline constexpr uint64_t kMultibootSearchBytes = 8192;      // the header lies in these
inline constexpr uint64_t kMultibootHeaderAlign = 4;
inline constexpr uint64_t kMultibootHeaderSize = 12;           // magic, flags, checksum
inline constexpr uint64_t kMultibootAddressesHeaderSize = 32;  // ... and the five addresses

// Header flags. Bits 0-15 are required: a loader that does not support one
// must refuse the image. Bits 16-31 are optional.
inline constexpr uint32_t kMultibootFlagPageAlign = 1u << 0;   // modules page-aligned
inline constexpr uint32_t kMultibootFlagMemoryInfo = 1u << 1;  // mem_* and mmap_* wanted
inline constexpr uint32_t kMultibootFlagVideo = 1u << 2;       // a video mode: refused
inline constexpr uint32_t kMultibootFlagAddresses = 1u << 16;  // the "a.out kludge"
inline constexpr uint32_t kMultibootRequiredFlags = 0xFFFF;
inline constexpr uint32_t kMultibootSupportedFlags =
    kMultibootFlagPageAlign | kMultibootFlagMemoryInfo;

// Images and modules are placed at or above 1 MiB, below 4 GiB.
inline constexpr uint64_t kMultibootMinLoadGpa = 0x100000;
// An image may also load into low RAM, wholly inside [kMultibootLowLoadGpa,
// kMultibootLowRamEnd), as QEMU's loader lets it (kvm-unit-tests'
// realmode.flat loads at 0x8000); the information area then starts after it.
inline constexpr uint64_t kMultibootLowLoadGpa = 0x1000;
inline constexpr uint64_t kMultibootMaxGpa = uint64_t{1} << 32;

// Information structure flags (which of its fields are valid).
inline constexpr uint32_t kMultibootInfoMemory = 1u << 0;   // mem_lower, mem_upper
inline constexpr uint32_t kMultibootInfoCmdline = 1u << 2;  // cmdline
inline constexpr uint32_t kMultibootInfoMods = 1u << 3;     // mods_count, mods_addr
inline constexpr uint32_t kMultibootInfoMmap = 1u << 6;     // mmap_length, mmap_addr

// The fixed area, below the EBDA, the information structure and everything it
// points to (command line, module list, module strings, memory map) are
// written into: [kMultibootInfoAreaStart, kMultibootInfoAreaEnd).
inline constexpr uint64_t kMultibootInfoAreaStart = 0x9000;
inline constexpr uint64_t kMultibootInfoAreaEnd = 0x9F000;

// The memory map's fixed holes: the EBDA and the BIOS area.
inline constexpr uint64_t kMultibootLowRamEnd = 0x9FC00;  // 639 KiB
inline constexpr uint64_t kMultibootVgaStart = 0xA0000;
inline constexpr uint64_t kMultibootBiosStart = 0xF0000;
inline constexpr uint32_t kMultibootMemoryAvailable = 1;
inline constexpr uint32_t kMultibootMemoryReserved = 2;

// The information structure up to vbe_interface_len (88 bytes); the fields
// this writer does not fill are zero.
struct MultibootInfo {
  uint32_t flags;
  uint32_t mem_lower, mem_upper;  // KiB below 640 KiB, KiB above 1 MiB
  uint32_t boot_device;
  uint32_t cmdline;  // physical address of a NUL-terminated string
  uint32_t mods_count, mods_addr;
  uint32_t syms[4];
  uint32_t mmap_length, mmap_addr;  // bytes of the map; address of its first entry
  uint32_t drives_length, drives_addr;
  uint32_t config_table, boot_loader_name, apm_table;
  uint32_t vbe_control_info, vbe_mode_info;
  uint16_t vbe_mode, vbe_interface_seg, vbe_interface_off, vbe_interface_len;
};
static_assert(sizeof(MultibootInfo) == 88);
static_assert(offsetof(MultibootInfo, mods_count) == 20);
static_assert(offsetof(MultibootInfo, mmap_length) == 44);
static_assert(offsetof(MultibootInfo, vbe_mode) == 80);

struct MultibootModuleEntry {
  uint32_t mod_start, mod_end;  // [start, end) physical
  uint32_t string;              // physical address of a NUL-terminated string
  uint32_t reserved;
};
static_assert(sizeof(MultibootModuleEntry) == 16);

// One memory map entry. `size` (20) counts the bytes after itself; the
// 64-bit fields sit at offsets 4 and 12, so the struct is packed.
struct __attribute__((packed)) MultibootMmapEntry {
  uint32_t size;
  uint64_t base_addr, length;
  uint32_t type;  // kMultibootMemoryAvailable or kMultibootMemoryReserved
};
static_assert(sizeof(MultibootMmapEntry) == 24);

// The header's five addresses (present with kMultibootFlagAddresses).
struct MultibootAddresses {
  uint32_t header_addr;    // where the header's magic is loaded
  uint32_t load_addr;      // start of the text segment
  uint32_t load_end_addr;  // end of the data segment; 0: the rest of the file
  uint32_t bss_end_addr;   // end of the bss; 0: no bss
  uint32_t entry_addr;
};

struct MultibootHeader {
  uint64_t offset = 0;  // of the magic, in the file
  uint32_t flags = 0;
  std::optional<MultibootAddresses> addresses;  // when flags has kMultibootFlagAddresses
};

// Scans the first kMultibootSearchBytes of `file`, at 4-byte alignment, for
// kMultibootHeaderMagic followed by flags and a checksum that sum with it to
// 0 (mod 2^32); the first such header counts.
// Errors (InvalidArgument, the message naming the field): no header; the
// header (with its addresses when flag 16 is set) running past the file end;
// a required flag (bits 0-15) other than bits 0 and 1.
absl::StatusOr<MultibootHeader> FindMultibootHeader(std::span<const uint8_t> file);

struct MultibootImage {
  uint32_t entry = 0;       // physical entry address
  uint64_t lowest_gpa = 0;  // lowest address loaded
  uint64_t end_gpa = 0;     // end of the image (bss included), rounded up to 4 KiB
  uint64_t low_end_gpa = 0;  // end of its ranges in low RAM, rounded up to 4 KiB; 0: none
  MultibootHeader header;
};

// Validates `file` and loads it into `memory`. An ELF file (ELFCLASS32 with
// EM_386, or ELFCLASS64 with EM_X86_64; ET_EXEC, little-endian) loads by its
// PT_LOAD segments at p_paddr, p_filesz bytes copied and the rest up to
// p_memsz zeroed; e_entry must lie inside a PT_LOAD by virtual address and
// is translated to its physical address. Any other file needs the header's
// addresses (flag 16): [load_addr, load_end_addr) comes from the file at the
// header's offset less (header_addr - load_addr), and the rest up to
// bss_end_addr is zeroed.
// Every range must lie at or above kMultibootMinLoadGpa and below 4 GiB, or
// wholly in low RAM, [kMultibootLowLoadGpa, kMultibootLowRamEnd), and
// segments must not overlap. Errors, each message naming the field:
// InvalidArgument for a malformed image, OutOfRange for one that does not fit
// in guest RAM. Nothing is written to `memory` unless the whole image is
// valid.
absl::StatusOr<MultibootImage> LoadMultiboot(std::span<const uint8_t> file,
                                             const GuestMemory& memory);

struct MultibootModule {
  std::span<const uint8_t> data;  // not owned; must outlive the call
  std::string string;             // its command line
};

struct MultibootInfoRequest {
  std::string cmdline;  // as QEMU passes it: "<image path> <args>"
  std::vector<MultibootModule> modules;
  uint64_t after_gpa = 0;  // modules go page-aligned at or after this (the image's end_gpa)
  // The image's low_end_gpa: the information area starts at or after it.
  uint64_t low_image_end = 0;
};

// Writes the information structure (flags MEM, CMDLINE, MODS, MMAP), the
// command line, the module list and strings and the memory map into the info
// area (from kMultibootInfoAreaStart, or from request.low_image_end where
// the image reaches past that, up to kMultibootInfoAreaEnd), and copies each module page-aligned from request.after_gpa on.
// mem_lower is 639 KiB and mem_upper (RAM - 1 MiB) / 1 KiB; the map has
// [0, 0x9FC00) available, [0x9FC00, 0xA0000) and [0xF0000, 0x100000)
// reserved and [0x100000, RAM end) available.
// Errors: FailedPrecondition for RAM that ends at or below 1 MiB;
// ResourceExhausted when the structure and its strings do not fit in the
// info area; InvalidArgument for an after_gpa outside [1 MiB, 4 GiB];
// OutOfRange when the modules do not fit in RAM below 4 GiB. Nothing is
// written unless everything fits. Returns the structure's physical address
// (EBX at entry).
absl::StatusOr<uint32_t> WriteMultibootInfo(const MultibootInfoRequest& request,
                                            const GuestMemory& memory);

}  // namespace minivmm

#endif  // MINIVMM_VMM_BOOT_MULTIBOOT_H_
