// Random hostile hypercalls (direct and batched) over fake memory: whatever
// the arguments, every result is a value or one of the ABI's errnos, and the
// VMM-owned state keeps its invariants. A quick, deterministic stand-in for the
// fuzz targets (fuzz/).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "hypercalls/descriptor.h"
#include "tests/common/descriptors.h"
#include "tests/hypercalls/expect.h"

namespace minivmm {
// A namespace of the file's own: the test binaries are unity builds.
namespace hostile_inputs_test {
namespace {

using testing::CheckedVm;
using testing::kRamSize;

constexpr uint64_t kBootCr0 = 0x80050023;
constexpr uint8_t kGdtPattern = 0x5A;

class HostileInputsTest : public ::testing::Test {
 protected:
  uint64_t Value() {
    static constexpr uint64_t kEdges[] = {0,
                                          1,
                                          2,
                                          3,
                                          7,
                                          8,
                                          0x10,
                                          0x1B,
                                          255,
                                          256,
                                          511,
                                          512,
                                          513,
                                          4096,
                                          4097,
                                          kRamSize - 64,
                                          kRamSize - 8,
                                          kRamSize,
                                          kRamSize + 8,
                                          MVMM_GDT_GPA,
                                          MVMM_GDT_GPA + 56,
                                          MVMM_GDT_GPA + 64,
                                          MVMM_GDT_GPA + 4096,
                                          ~0ull,
                                          ~0ull - 63,
                                          1ull << 58,
                                          1ull << 63,
                                          0x0000800000000000ull,
                                          testing::kUserTlsDesc,
                                          0x00AF9B000000FFFFull,
                                          kBootCr0,
                                          kBootCr0 | MVMM_CR0_TS,
                                          0x5001,
                                          0x200083,
                                          MVMM_TSS_GPA};
    switch (rng_() % 4) {
      case 0:
        return rng_();
      case 1:
        return rng_() % 0x20000;  // likely inside RAM, near the lists
      default:
        return kEdges[rng_() % std::size(kEdges)];
    }
  }
  uint64_t Number() {
    // Every number of the ABI's list, and some that are nobody's.
    static constexpr uint64_t kNumbers[] = {
#define HOSTILE_NR_(nr, name) nr,
        MVMM_HYPERCALL_LIST(HOSTILE_NR_)
#undef HOSTILE_NR_
            0,
        2,
        64,
        127,
        128,
        1ull << 32};
    return rng_() % 8 == 0 ? rng_() : kNumbers[rng_() % std::size(kNumbers)];
  }
  // Scatters random multicall entries and mmu_update requests near 0x10000.
  void ScribbleLists() {
    for (uint64_t gpa = 0x10000; gpa < 0x14000; gpa += 8) {
      vm_.Poke64(gpa, gpa % 64 == 0 ? Number() : Value());
    }
  }
  void CheckInvariants(int64_t result) {
    static const std::set<int64_t> kErrnos = {-MVMM_EPERM,  -MVMM_ENOENT, -MVMM_E2BIG,
                                              -MVMM_EFAULT, -MVMM_EINVAL, -MVMM_ENOSYS};
    ASSERT_TRUE(result >= 0 || kErrnos.count(result)) << result;
    ASSERT_EQ((vm_.vcpu.cr0 ^ kBootCr0) & ~MVMM_CR0_GUEST_WRITABLE, 0u);
    // Everything but slots 7-9 (bytes 56..79) is exactly as the VMM left it.
    const std::vector<uint8_t> pattern(vm_.gdt.size(), kGdtPattern);
    ASSERT_EQ(std::memcmp(vm_.gdt.data(), pattern.data(), 56), 0);
    ASSERT_EQ(std::memcmp(vm_.gdt.data() + 80, pattern.data(), vm_.gdt.size() - 80), 0);
    for (int slot = 7; slot <= 9; ++slot) {
      const uint64_t desc = vm_.GdtSlot(slot);
      if (desc == 0x5A5A5A5A5A5A5A5Aull || desc == 0) continue;
      ASSERT_EQ(CheckTlsDescriptor(desc), DescriptorVerdict::kOk) << std::hex << desc;
      ASSERT_NE(desc & MVMM_DESC_ACCESSED, 0u);
    }
    ASSERT_GE(vm_.control.exit_code, 0);
    ASSERT_LE(vm_.control.exit_code, 255);
    ASSERT_LE(vm_.reports.bytes, GuestReports::kMaxBytes);
  }

  std::mt19937_64 rng_{20240601};
  CheckedVm vm_;
};

TEST_F(HostileInputsTest, RandomCallsKeepInvariants) {
  std::fill(vm_.gdt.begin(), vm_.gdt.end(), kGdtPattern);
  vm_.vcpu.cr0 = kBootCr0;
  for (int i = 0; i < 20000; ++i) {
    if (i % 64 == 0) ScribbleLists();
    vm_.console.out.clear();
    uint64_t nr = Number();
    HypercallArgs args = {Value(), Value(), Value(), Value(), Value()};
    if (i % 3 == 0) {  // batched: a list in the scribbled area, plausible count
      nr = rng_() % 2 ? MVMM_HC_multicall : MVMM_HC_mmu_update;
      args[0] = 0x10000 + 16 * (rng_() % 64);
      args[1] = rng_() % 40;
    }
    vm_.SetHypercallRegs(nr, args);
    const int64_t result = vm_.dispatcher.HandleExit(vm_.env);
    ASSERT_EQ(vm_.vcpu.Get(Reg::kRax), static_cast<uint64_t>(result));
    CheckInvariants(result);
    if (HasFatalFailure()) return;
  }
  // The run must have exercised both success and failure of the batches.
  EXPECT_GT(vm_.stats.hc_ops[MVMM_HC_multicall], 100u);
  EXPECT_GT(vm_.cause(Cause::kMulticall).ops, 100u);
  EXPECT_GT(vm_.stats.hc_errors[MVMM_HC_multicall], 0u);
}

}  // namespace
}  // namespace hostile_inputs_test
}  // namespace minivmm
