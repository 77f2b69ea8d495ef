#include "vmm/boot/boot_layout.h"

#include <cstring>
#include <span>

#include "absl/strings/str_format.h"
#include "minivmm_abi/boot.h"

namespace minivmm {
namespace {

constexpr uint64_t kPresent = 1, kWritable = 2, kLargePage = 1 << 7;
constexpr uint64_t kPml4Gpa = MVMM_PAGE_TABLES_GPA;
constexpr uint64_t kPdptGpa = MVMM_PAGE_TABLES_GPA + 0x1000;
constexpr uint64_t kFirstPdGpa = MVMM_PAGE_TABLES_GPA + 0x2000;  // PDs for GiB 0..3

// A 64-bit code/data descriptor with base 0, limit 4 GiB pages, accessed.
constexpr uint64_t kKernelCode = 0x00af9b000000ffffull;
constexpr uint64_t kKernelData = 0x00cf93000000ffffull;
constexpr uint64_t kUserData = 0x00cff3000000ffffull;
constexpr uint64_t kUserCode = 0x00affb000000ffffull;

uint64_t TssDescriptorLow(uint64_t base, uint32_t limit) {
  constexpr uint64_t kBusyTss = 0x8b;  // present, DPL 0, type 0xb (busy 64-bit TSS)
  return (limit & 0xffff) | ((base & 0xffffff) << 16) | (kBusyTss << 40) |
         ((uint64_t{limit} >> 16 & 0xf) << 48) | (((base >> 24) & 0xff) << 56);
}

}  // namespace

void WriteInitialGdt(std::span<uint8_t> gdt_page, uint32_t cpus) {
  std::memset(gdt_page.data(), 0, gdt_page.size());
  uint64_t gdt[MVMM_GDT_ENTRIES] = {};
  gdt[MVMM_GDT_KERNEL_CODE] = kKernelCode;
  gdt[MVMM_GDT_KERNEL_DATA] = kKernelData;
  gdt[MVMM_GDT_USER_DATA] = kUserData;
  gdt[MVMM_GDT_USER_CODE] = kUserCode;
  for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
    const uint64_t offset = MVMM_CPU_GDT_GPA(cpu) - MVMM_GDT_GPA;
    if (offset + sizeof(gdt) > gdt_page.size()) return;
    gdt[MVMM_GDT_TSS] = TssDescriptorLow(MVMM_CPU_TSS_GPA(cpu), sizeof(mvmm_tss) - 1);
    gdt[MVMM_GDT_TSS + 1] = MVMM_CPU_TSS_GPA(cpu) >> 32;
    // Safety: offset + 80 <= gdt_page.size(), checked just above.
    std::memcpy(gdt_page.data() + offset, gdt, sizeof(gdt));
  }
}

absl::StatusOr<uint64_t> WriteIdentityPageTables(const GuestMemory& memory) {
  if (memory.size() < MVMM_PAGE_TABLES_END || memory.size() > MVMM_MEMORY_MAX)
    return absl::InvalidArgumentError("RAM size outside what the boot page tables can map");
  // Every table lies below MVMM_PAGE_TABLES_END, checked above, so no store
  // can be refused; if one is, nothing is written after it.
  bool inside = true;
  auto write = [&](uint64_t gpa, uint64_t value) {
    inside = inside && memory.WriteObj(GuestAddress(gpa), value);
  };
  write(kPml4Gpa, kPdptGpa | kPresent | kWritable);
  for (uint64_t gib = 0; gib < 4; ++gib) {
    uint64_t pd = kFirstPdGpa + gib * 0x1000;
    write(kPdptGpa + gib * 8, pd | kPresent | kWritable);
  }
  auto map_2mib = [&](uint64_t gpa) {
    uint64_t pd_entry = kFirstPdGpa + (gpa >> 30) * 0x1000 + ((gpa >> 21) & 511) * 8;
    write(pd_entry, gpa | kPresent | kWritable | kLargePage);
  };
  for (uint64_t gpa = 0; gpa < memory.size(); gpa += kTwoMiB) map_2mib(gpa);
  map_2mib(MVMM_GDT_GPA);
  if (!inside) return absl::OutOfRangeError("boot page tables outside guest RAM");
  return kPml4Gpa;
}

absl::Status WriteTss(const GuestMemory& memory, uint32_t cpus) {
  mvmm_tss tss{};
  tss.iomap_base = sizeof(mvmm_tss);  // no I/O bitmap: every port faults at CPL 3
  for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
    if (!memory.WriteObj(GuestAddress(MVMM_CPU_TSS_GPA(cpu)), tss))
      return absl::OutOfRangeError("TSS outside guest RAM");
  }
  return absl::OkStatus();
}

absl::Status WriteBootInfo(const GuestMemory& memory, const BootInfoParams& params) {
  if (params.cmdline.size() > MVMM_CMDLINE_MAX)
    return absl::InvalidArgumentError(absl::StrFormat(
        "guest command line is %u bytes, at most %u fit", params.cmdline.size(), MVMM_CMDLINE_MAX));
  const GuestAddress cmdline_gpa(MVMM_CMDLINE_GPA);
  if (!memory.Write(cmdline_gpa, std::span(params.cmdline)) ||
      !memory.WriteObj(cmdline_gpa + params.cmdline.size(), '\0'))
    return absl::OutOfRangeError("command line outside guest RAM");
  mvmm_boot_info info{};
  info.magic = MVMM_BOOT_MAGIC;
  info.version = MVMM_BOOT_VERSION;
  info.memory_size = memory.size();
  info.cmdline_gpa = MVMM_CMDLINE_GPA;
  info.cmdline_len = params.cmdline.size();
  info.gdt_gpa = MVMM_GDT_GPA;
  info.tss_gpa = MVMM_TSS_GPA;
  info.first_free_gpa = (params.first_free_gpa + 4095) & ~uint64_t{4095};
  info.hypercall_port = MVMM_HYPERCALL_PORT;
  info.timer_vector = MVMM_TIMER_VECTOR;
  info.timer_hz = params.timer_hz;
  info.flags = params.timer_hz > 0 ? MVMM_BOOT_FLAG_TIMER_PERIODIC : 0;
  info.vcpu_info_gpa = MVMM_VCPU_INFO_GPA;
  info.nr_cpus = params.nr_cpus;
  if (!memory.WriteObj(GuestAddress(MVMM_VCPU_INFO_GPA), mvmm_vcpu_info{}))
    return absl::OutOfRangeError("vcpu_info outside guest RAM");
  if (!memory.WriteObj(GuestAddress(MVMM_BOOT_INFO_GPA), info))
    return absl::OutOfRangeError("boot_info outside guest RAM");
  return absl::OkStatus();
}

}  // namespace minivmm
