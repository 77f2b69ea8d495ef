// The per-CPU parts of the boot layout (minivmm_abi/boot.h): one TSS per
// vCPU, boot_info.nr_cpus, and stacks that neither overlap nor leave the
// space below the kernel; and the GDT's TLS slots, which start empty.
#include "vmm/boot/boot_layout.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "minivmm/guest_memory.h"
#include "minivmm_abi/boot.h"

namespace minivmm {
namespace {

TEST(BootLayoutTest, EachCpuGetsAZeroedTssWithNoIoBitmapAndNoMore) {
  std::vector<uint8_t> ram(2 << 20, 0xAA);
  GuestMemory memory(ram);
  ASSERT_TRUE(WriteTss(memory, 4).ok());
  for (uint32_t cpu = 0; cpu < 4; ++cpu) {
    SCOPED_TRACE(cpu);
    const mvmm_tss tss = memory.ReadObj<mvmm_tss>(GuestAddress(MVMM_CPU_TSS_GPA(cpu))).value();
    EXPECT_EQ(tss.iomap_base, sizeof(mvmm_tss));
    EXPECT_EQ(tss.rsp[0], 0u);
  }
  EXPECT_EQ(ram[MVMM_CPU_TSS_GPA(4)], 0xAA);
  EXPECT_EQ(ram[MVMM_CPU_TSS_GPA(0) + sizeof(mvmm_tss)], 0xAA);
}

TEST(BootLayoutTest, BootInfoCarriesTheCpuCount) {
  std::vector<uint8_t> ram(2 << 20, 0);
  GuestMemory memory(ram);
  ASSERT_TRUE(WriteBootInfo(memory, {"", 0x200000, 0, 8}).ok());
  const mvmm_boot_info info =
      memory.ReadObj<mvmm_boot_info>(GuestAddress(MVMM_BOOT_INFO_GPA)).value();
  EXPECT_EQ(info.nr_cpus, 8u);
  EXPECT_EQ(info.reserved32, 0u);
}

// The guest's TLS shadow starts from this (minivmm_abi/boot.h).
TEST(BootLayoutTest, InitialGdtHasEmptyTlsSlots) {
  std::vector<uint8_t> page(4096, 0xAA);
  WriteInitialGdt(page);
  for (uint32_t slot = 0; slot < MVMM_GDT_ENTRIES; ++slot) {
    SCOPED_TRACE(slot);
    uint64_t desc;
    std::memcpy(&desc, page.data() + slot * sizeof(desc), sizeof(desc));
    const bool tls = slot >= MVMM_GDT_TLS_FIRST && slot < MVMM_GDT_TLS_FIRST + MVMM_GDT_TLS_COUNT;
    if (tls || slot == MVMM_GDT_NULL) {
      EXPECT_EQ(desc, 0u);
    } else if (slot != MVMM_GDT_TSS + 1) {  // the TSS base's high half, 0 here
      EXPECT_NE(desc, 0u);
    }
  }
}

TEST(BootLayoutTest, CpuStacksAreDisjointAndBelowTheKernel) {
  EXPECT_EQ(MVMM_CPU_STACK_TOP(0), MVMM_BOOT_STACK_TOP);
  for (uint32_t cpu = 1; cpu < MVMM_MAX_CPUS; ++cpu) {
    SCOPED_TRACE(cpu);
    const uint64_t top = MVMM_CPU_STACK_TOP(cpu);
    EXPECT_EQ(top - MVMM_AP_STACK_SIZE, MVMM_AP_STACKS_GPA + (cpu - 1) * MVMM_AP_STACK_SIZE);
    EXPECT_GE(top - MVMM_AP_STACK_SIZE, MVMM_BOOT_STACK_TOP);
    EXPECT_LE(top, MVMM_KERNEL_MIN_GPA);
    if (cpu >= 2) {
      EXPECT_EQ(top - MVMM_AP_STACK_SIZE, MVMM_CPU_STACK_TOP(cpu - 1));
    }
    EXPECT_LE(MVMM_CPU_TSS_GPA(cpu) + sizeof(mvmm_tss), MVMM_TSS_GPA + 4096);
  }
}

}  // namespace
}  // namespace minivmm
