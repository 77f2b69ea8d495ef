// The PVH entry's C half: QEMU -kernel with backend=native. The
// console is the UART, reports are printed, shutdown is isa-debug-exit.
#include "arch/cpu.h"
#include "arch/trap.h"
#include "kernel/boot.h"
#include "kernel/console.h"
#include "kernel/panic.h"

extern "C" uint64_t pvh_gdt[10];
extern "C" char __kernel_end[];

namespace guest {
namespace {

constexpr uint32_t kHvmStartMagic = 0x336ec578;
constexpr uint32_t kE820Ram = 1;

struct HvmStartInfo {
  uint32_t magic;
  uint32_t version;
  uint32_t flags;
  uint32_t nr_modules;
  uint64_t modlist_paddr;
  uint64_t cmdline_paddr;
  uint64_t rsdp_paddr;
  uint64_t memmap_paddr;  // version >= 1
  uint32_t memmap_entries;
  uint32_t reserved;
};

struct HvmMemmapEntry {
  uint64_t addr;
  uint64_t size;
  uint32_t type;
  uint32_t reserved;
};

alignas(16) mvmm_tss g_pvh_tss;

// RAM contiguous from 1 MiB (where the kernel is) per the memory map;
// capped like the VMM's RAM, below the 3 GiB hole.
uint64_t MemorySize(const HvmStartInfo* si) {
  if (si->version < 1 || si->memmap_paddr == 0)
    return 64ull << 20;  // QEMU's default -m 128M covers it
  auto* e = reinterpret_cast<const HvmMemmapEntry*>(si->memmap_paddr);
  uint64_t end = 0;
  for (uint32_t i = 0; i < si->memmap_entries; ++i) {
    if (e[i].type == kE820Ram && e[i].addr <= MVMM_KERNEL_MIN_GPA && e[i].addr + e[i].size > end) {
      end = e[i].addr + e[i].size;
    }
  }
  if (end > MVMM_MEMORY_MAX) end = MVMM_MEMORY_MAX;
  return end & ~((2ull << 20) - 1);
}

void InstallTss() {
  uint64_t base = reinterpret_cast<uint64_t>(&g_pvh_tss);
  uint64_t limit = sizeof(g_pvh_tss) - 1;
  g_pvh_tss.iomap_base = sizeof(g_pvh_tss);
  pvh_gdt[MVMM_GDT_TSS] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (0x89ull << 40) |
                          (((base >> 24) & 0xff) << 56);
  pvh_gdt[MVMM_GDT_TSS + 1] = base >> 32;
  asm volatile("ltr %w0" ::"r"(MVMM_SEL_TSS));
}

}  // namespace
}  // namespace guest

using namespace guest;

extern "C" [[noreturn]] void KernelMainPvh(const HvmStartInfo* si) {
  IdtInit();
  g_boot.under_minivmm = false;
  ConsoleInit(ConsoleKind::kUart);
  // The legacy PICs would deliver the PIT on vector 8: mask them all.
  cpu::Outb(0x21, 0xff);
  cpu::Outb(0xa1, 0xff);
  if (si->magic != kHvmStartMagic) Fatal(kExitAssert, "bad hvm_start_info magic");
  InstallTss();
  g_boot.memory_size = MemorySize(si);
  g_boot.gdt_gpa = reinterpret_cast<uint64_t>(pvh_gdt);
  g_boot.tss = &g_pvh_tss;
  g_boot.first_free = reinterpret_cast<uint64_t>(__kernel_end);
  g_boot.timer_hz = 0;
  StrView line;
  if (si->cmdline_paddr != 0) {
    const char* c = reinterpret_cast<const char*>(si->cmdline_paddr);
    size_t n = 0;
    while (n < MVMM_CMDLINE_MAX && c[n] != '\0') ++n;
    line = StrView(c, n);
  }
  KernelRun(line);
}
