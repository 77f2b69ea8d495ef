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
  WriteInitialGdt(page, 1);
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

uint64_t Entry(const std::vector<uint8_t>& page, uint64_t offset) {
  uint64_t desc;
  std::memcpy(&desc, page.data() + offset, sizeof(desc));
  return desc;
}

// The TSS base a 16-byte system descriptor describes (Intel SDM vol. 3, 8.2.3).
uint64_t TssBase(uint64_t low, uint64_t high) {
  return (low >> 16 & 0xffffff) | (low >> 56 & 0xff) << 24 | (high & 0xffffffff) << 32;
}

// One GDT per vCPU, CPU n's at MVMM_CPU_GDT_GPA(n): CPU 0's entries with the
// TSS descriptor pointing at CPU n's own TSS; the rest of the page is zero.
TEST(BootLayoutTest, EachCpuGetsAGdtWhoseTssDescriptorIsItsOwnTss) {
  for (uint32_t cpus : {1u, 2u, 7u, MVMM_MAX_CPUS}) {
    SCOPED_TRACE(cpus);
    std::vector<uint8_t> page(4096, 0xAA);
    WriteInitialGdt(page, cpus);
    const uint64_t tss_low = MVMM_GDT_TSS * 8, tss_high = tss_low + 8;
    for (uint32_t cpu = 0; cpu < MVMM_MAX_CPUS; ++cpu) {
      SCOPED_TRACE(cpu);
      const uint64_t block = MVMM_CPU_GDT_GPA(cpu) - MVMM_GDT_GPA;
      for (uint64_t at = 0; at < MVMM_GDT_STRIDE; at += 8) {
        const uint64_t entry = Entry(page, block + at);
        if (cpu >= cpus || at >= MVMM_GDT_ENTRIES * 8) {
          EXPECT_EQ(entry, 0u) << at;  // no such CPU, or entries 10-15
        } else if (at != tss_low && at != tss_high) {
          EXPECT_EQ(entry, Entry(page, at)) << at;  // CPU 0's
        }
      }
      if (cpu >= cpus) continue;
      const uint64_t low = Entry(page, block + tss_low);
      EXPECT_EQ(TssBase(low, Entry(page, block + tss_high)), MVMM_CPU_TSS_GPA(cpu));
      EXPECT_EQ(low & 0xffff, sizeof(mvmm_tss) - 1);  // limit
      EXPECT_EQ(low >> 40 & 0xff, 0x8bu);             // present busy 64-bit TSS, DPL 0
    }
  }
}

// A one-CPU VM's GDT page is the single GDT of docs/design.md "GDT", byte for
// byte, and zeros.
TEST(BootLayoutTest, OneCpuGdtPageIsTheSingleGdt) {
  std::vector<uint8_t> page(4096, 0xAA);
  WriteInitialGdt(page, 1);
  const uint64_t want[MVMM_GDT_ENTRIES] = {0,
                                           0x00af9b000000ffffull,
                                           0x00cf93000000ffffull,
                                           0x00cff3000000ffffull,
                                           0x00affb000000ffffull,
                                           0x00008b0030000067ull,
                                           0,
                                           0,
                                           0,
                                           0};
  std::vector<uint8_t> expected(4096, 0);
  std::memcpy(expected.data(), want, sizeof(want));
  EXPECT_EQ(page, expected);
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
