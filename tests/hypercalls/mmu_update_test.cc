#include <gtest/gtest.h>

#include <vector>

#include "tests/hypercalls/expect.h"

namespace minivmm {
namespace {

using testing::CheckedVm;
using testing::kRamSize;

constexpr uint64_t kReqs = 0x6000;   // request list
constexpr uint64_t kTable = 0x9000;  // a page table the guest edits

class MmuUpdateTest : public ::testing::Test {
 protected:
  HypercallResult UpdateResult(const std::vector<mvmm_mmu_update>& reqs) {
    for (size_t i = 0; i < reqs.size(); ++i) {
      vm_.Poke64(kReqs + 16 * i, reqs[i].ptr);
      vm_.Poke64(kReqs + 16 * i + 8, reqs[i].val);
    }
    return vm_.Result(MVMM_HC_mmu_update, kReqs, reqs.size());
  }
  int64_t Update(const std::vector<mvmm_mmu_update>& reqs) { return UpdateResult(reqs).value; }
  CheckedVm vm_;
};

TEST_F(MmuUpdateTest, WritesEveryPteAndReturnsCount) {
  const HypercallResult result =
      UpdateResult({{kTable, 0x5000 | 0x3}, {kTable + 8, 0x6000 | 0x7 | (1ull << 63)}});
  EXPECT_EQ(testing::AbiRow(result.value, "mmu_update.ok"), 2);
  EXPECT_EQ(result.refusal, nullptr);
  EXPECT_EQ(vm_.Peek64(kTable), 0x5003u);
  EXPECT_EQ(vm_.Peek64(kTable + 8), 0x6007u | (1ull << 63));
}

TEST_F(MmuUpdateTest, NotPresentValueIsWrittenAsIs) {
  EXPECT_EQ(Update({{kTable, 0xDEADBEEF00000000ull}}), 1);
  EXPECT_EQ(vm_.Peek64(kTable), 0xDEADBEEF00000000ull);
}

// docs/hypercalls.md: count 0 returns 0 without looking at the list, even
// one outside RAM; an exit of page_table_update with no op, no error.
TEST_F(MmuUpdateTest, ZeroCountIsNoopEvenWithAListOutsideRam) {
  for (uint64_t list : {~uint64_t{0}, uint64_t{kRamSize}, uint64_t{MVMM_GDT_GPA}}) {
    const HypercallResult result = vm_.Result(MVMM_HC_mmu_update, list, 0);
    EXPECT_EQ(result.value, 0) << list;
    EXPECT_EQ(result.refusal, nullptr) << list;
  }
  EXPECT_EQ(vm_.cause(Cause::kPageTableUpdate).ops, 0u);
  EXPECT_EQ(vm_.cause(Cause::kPageTableUpdate).exits, 3u);
  EXPECT_EQ(vm_.stats.hc_errors[MVMM_HC_mmu_update], 0u);
}

TEST_F(MmuUpdateTest, MaximumCountIsAccepted) {
  std::vector<mvmm_mmu_update> reqs(MVMM_MMU_UPDATE_MAX_REQS, {kTable, 0});
  EXPECT_EQ(Update(reqs), MVMM_MMU_UPDATE_MAX_REQS);
}

TEST_F(MmuUpdateTest, OverMaximumCountIsE2big) {
  const HypercallResult result =
      vm_.Result(MVMM_HC_mmu_update, kReqs, MVMM_MMU_UPDATE_MAX_REQS + 1);
  EXPECT_EQ(testing::AbiRow(result.value, "mmu_update.E2BIG"), -MVMM_E2BIG);
  EXPECT_STREQ(result.refusal, "count above MVMM_MMU_UPDATE_MAX_REQS");
  EXPECT_EQ(vm_.Call(MVMM_HC_mmu_update, kReqs, 1ull << 60), -MVMM_E2BIG);  // count*16 wraps
}

TEST_F(MmuUpdateTest, ListOutsideRamIsEfault) {
  const HypercallResult result = vm_.Result(MVMM_HC_mmu_update, kRamSize - 16, 2);  // crosses end
  EXPECT_EQ(testing::AbiRow(result.value, "mmu_update.EFAULT"), -MVMM_EFAULT);
  EXPECT_STREQ(result.refusal, "request list outside RAM");
  EXPECT_EQ(vm_.Call(MVMM_HC_mmu_update, ~0ull - 15, 1), -MVMM_EFAULT);  // wraps
}

TEST_F(MmuUpdateTest, ListEndingAtEndOfRamIsAccepted) {
  vm_.Poke64(kRamSize - 16, kTable);
  vm_.Poke64(kRamSize - 8, 0);
  EXPECT_EQ(vm_.Call(MVMM_HC_mmu_update, kRamSize - 16, 1), 1);
}

TEST_F(MmuUpdateTest, MisalignedPtrIsEinval) {
  const HypercallResult result = UpdateResult({{kTable + 4, 0}});
  EXPECT_EQ(testing::AbiRow(result.value, "mmu_update.EINVAL"), -MVMM_EINVAL);
  EXPECT_STREQ(result.refusal, "PTE address misaligned");
}

TEST_F(MmuUpdateTest, PtrOutsideRamIsEfault) {
  EXPECT_EQ(testing::AbiRow(Update({{kRamSize, 0}}), "mmu_update.EFAULT.2"), -MVMM_EFAULT);
  EXPECT_EQ(Update({{MVMM_GDT_GPA + 56, 0}}), -MVMM_EFAULT);  // the GDT is not RAM
  EXPECT_EQ(Update({{~7ull, 0}}), -MVMM_EFAULT);
}

TEST_F(MmuUpdateTest, PtrAtLastWordOfRamIsAccepted) {
  EXPECT_EQ(Update({{kRamSize - 8, 0x5001}}), 1);
  EXPECT_EQ(vm_.Peek64(kRamSize - 8), 0x5001u);
}

TEST_F(MmuUpdateTest, PresentFrameOutsideRamIsEperm) {
  const HypercallResult result = UpdateResult({{kTable, kRamSize | 1}});
  EXPECT_EQ(testing::AbiRow(result.value, "mmu_update.EPERM"), -MVMM_EPERM);
  EXPECT_STREQ(result.refusal, "PTE maps a frame outside RAM");
  EXPECT_EQ(Update({{kTable, MVMM_GDT_GPA | 3}}), -MVMM_EPERM);
  EXPECT_EQ(vm_.Peek64(kTable), 0u);
}

TEST_F(MmuUpdateTest, LastPageOfRamMayBeMapped) {
  EXPECT_EQ(Update({{kTable, (kRamSize - 4096) | 3}}), 1);
}

TEST_F(MmuUpdateTest, LargePageBitIsEinval) {
  EXPECT_EQ(Update({{kTable, 0x200000 | 0x83}}), -MVMM_EINVAL);
  EXPECT_EQ(vm_.Peek64(kTable), 0u);
}

// docs/hypercalls.md's order: both -EINVAL checks before ptr's -EFAULT.
TEST_F(MmuUpdateTest, PtrOutsideRamWithLargePageBitIsEinval) {
  const HypercallResult result = UpdateResult({{kRamSize, 0x200000 | 0x83}});
  EXPECT_EQ(result.value, -MVMM_EINVAL);
  EXPECT_STREQ(result.refusal, "PS/PAT bit 7 set in a present PTE");
  // Not present, bit 7 means nothing: ptr outside RAM is then -EFAULT.
  EXPECT_EQ(Update({{kRamSize, 0x200000 | 0x82}}), -MVMM_EFAULT);
}

TEST_F(MmuUpdateTest, StopsAtFirstBadRequestAndReturnsDone) {
  vm_.Poke64(kTable + 16, 0x77);
  const HypercallResult result =
      UpdateResult({{kTable, 0x5001}, {kTable + 8, kRamSize | 1}, {kTable + 16, 0x6001}});
  EXPECT_EQ(result.value, 1);
  EXPECT_EQ(result.refusal, nullptr);  // a short count is a success, not a refusal
  EXPECT_EQ(vm_.Peek64(kTable), 0x5001u);
  EXPECT_EQ(vm_.Peek64(kTable + 8), 0u);
  EXPECT_EQ(vm_.Peek64(kTable + 16), 0x77u);  // after the refused one: not run
}

TEST_F(MmuUpdateTest, ListIsCopiedOnceEvenWhenARequestRewritesIt) {
  // Request 0 overwrites request 1's val in guest memory; request 1 still
  // runs with the value it had when the list was copied.
  EXPECT_EQ(Update({{kReqs + 16 + 8, 0x2}, {kTable, 0x5001}}), 2);
  EXPECT_EQ(vm_.Peek64(kReqs + 24), 0x2u);
  EXPECT_EQ(vm_.Peek64(kTable), 0x5001u);
}

TEST_F(MmuUpdateTest, CountsRequestsDoneAsPageTableUpdates) {
  Update({{kTable, 0x5001}, {kTable + 8, 0x5001}, {kTable + 4, 0}});
  EXPECT_EQ(vm_.cause(Cause::kPageTableUpdate).ops, 2u);
  EXPECT_EQ(vm_.cause(Cause::kPageTableUpdate).exits, 1u);
}

}  // namespace
}  // namespace minivmm
