#include "lib/cpu_of_gdt.h"

#include <gtest/gtest.h>

namespace guest {
namespace {

constexpr uint64_t kPvhGdt = 0x105040;  // somewhere in the kernel image

TEST(CpuOfGdtTest, EachCpusBaseIsThatCpu) {
  for (uint32_t n = 0; n < MVMM_MAX_CPUS; ++n) {
    EXPECT_EQ(MinivmmCpuOfGdtBase(MVMM_CPU_GDT_GPA(n)), n);
    for (uint64_t pvh : {uint64_t{0}, kPvhGdt}) {
      const CpuOfGdt c = CpuOfGdtBase(MVMM_CPU_GDT_GPA(n), pvh);
      EXPECT_TRUE(c.known) << n;
      EXPECT_EQ(c.cpu, n);
    }
  }
}

TEST(CpuOfGdtTest, OneBelowTheFirstIsNoCpus) {
  EXPECT_GE(MinivmmCpuOfGdtBase(MVMM_GDT_GPA - 1), MVMM_MAX_CPUS);
  EXPECT_FALSE(CpuOfGdtBase(MVMM_GDT_GPA - 1, 0).known);
  EXPECT_FALSE(CpuOfGdtBase(MVMM_GDT_GPA - MVMM_GDT_STRIDE, kPvhGdt).known);
  EXPECT_FALSE(CpuOfGdtBase(0, 0).known);
}

TEST(CpuOfGdtTest, OnePastTheLastIsNoCpus) {
  EXPECT_GE(MinivmmCpuOfGdtBase(MVMM_CPU_GDT_GPA(MVMM_MAX_CPUS)), MVMM_MAX_CPUS);
  EXPECT_FALSE(CpuOfGdtBase(MVMM_CPU_GDT_GPA(MVMM_MAX_CPUS), 0).known);
  EXPECT_FALSE(CpuOfGdtBase(MVMM_CPU_GDT_GPA(MVMM_MAX_CPUS - 1) + MVMM_GDT_STRIDE - 1, 0).known);
  EXPECT_FALSE(CpuOfGdtBase(~uint64_t{0}, 0).known);
}

TEST(CpuOfGdtTest, ABaseInsideAStrideButNotAtItsStartIsNoCpus) {
  for (uint32_t n : {0u, 1u, MVMM_MAX_CPUS - 1}) {
    for (uint64_t in : {uint64_t{1}, uint64_t{8}, uint64_t{MVMM_GDT_STRIDE / 2}, uint64_t{MVMM_GDT_STRIDE - 1}}) {
      EXPECT_GE(MinivmmCpuOfGdtBase(MVMM_CPU_GDT_GPA(n) + in), MVMM_MAX_CPUS) << n << "+" << in;
      EXPECT_FALSE(CpuOfGdtBase(MVMM_CPU_GDT_GPA(n) + in, 0).known) << n << "+" << in;
    }
  }
}

TEST(CpuOfGdtTest, ThePvhGdtIsCpu0OnlyOutsideMinivmm) {
  const CpuOfGdt outside = CpuOfGdtBase(kPvhGdt, kPvhGdt);
  EXPECT_TRUE(outside.known);
  EXPECT_EQ(outside.cpu, 0u);
  EXPECT_FALSE(CpuOfGdtBase(kPvhGdt, 0).known);             // under minivmm: nobody's
  EXPECT_FALSE(CpuOfGdtBase(kPvhGdt + 8, kPvhGdt).known);   // only that very base
  EXPECT_FALSE(CpuOfGdtBase(kPvhGdt - 16, kPvhGdt).known);
}

static_assert(CpuOfGdtBase(MVMM_CPU_GDT_GPA(3), 0).cpu == 3);
static_assert(!CpuOfGdtBase(MVMM_CPU_GDT_GPA(3) + 8, 0).known);

}  // namespace
}  // namespace guest
