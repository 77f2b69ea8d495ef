#include "lib/batch.h"

#include <gtest/gtest.h>

namespace guest {
namespace {

TEST(MulticallBatchTest, AddEncodesOpAndArgsInAbiOrder) {
  MulticallBatch b;
  ASSERT_TRUE(b.Add(MVMM_HC_update_descriptor, 0xC0000038, 0x1234));
  ASSERT_EQ(b.count(), 1u);
  const mvmm_multicall_entry& e = b.entries()[0];
  EXPECT_EQ(e.op, uint64_t{MVMM_HC_update_descriptor});
  EXPECT_EQ(e.result, 0u);
  EXPECT_EQ(e.args[0], 0xC0000038u);
  EXPECT_EQ(e.args[1], 0x1234u);
  EXPECT_EQ(e.args[2], 0u);
  EXPECT_EQ(e.args[5], 0u);
}

TEST(MulticallBatchTest, MmuUpdatePointsAtItsOwnRequest) {
  MulticallBatch b;
  ASSERT_TRUE(b.Add(MVMM_HC_fpu_taskswitch, 1));
  ASSERT_TRUE(b.AddMmuUpdate(0x5008, 0x8000000000200003ull));
  const mvmm_multicall_entry& e = b.entries()[1];
  EXPECT_EQ(e.op, uint64_t{MVMM_HC_mmu_update});
  EXPECT_EQ(e.args[1], 1u);
  const auto* req = reinterpret_cast<const mvmm_mmu_update*>(e.args[0]);
  EXPECT_EQ(req->ptr, 0x5008u);
  EXPECT_EQ(req->val, 0x8000000000200003ull);
}

TEST(MulticallBatchTest, NewBasePtrPointsAtItsOwnMmuextOp) {
  MulticallBatch b;
  ASSERT_TRUE(b.AddMmuUpdate(0x5008, 0x3));
  ASSERT_TRUE(b.AddNewBasePtr(0x234000));
  const mvmm_multicall_entry& e = b.entries()[1];
  EXPECT_EQ(e.op, uint64_t{MVMM_HC_mmuext_op});
  EXPECT_EQ(e.args[1], 1u);
  const auto* op = reinterpret_cast<const mvmm_mmuext_op*>(e.args[0]);
  EXPECT_EQ(op->cmd, MVMM_MMUEXT_NEW_BASEPTR);
  EXPECT_EQ(op->reserved, 0u);
  EXPECT_EQ(op->arg1, 0x234u);  // the frame number
  EXPECT_EQ(op->arg2, 0u);
  // The mmu_update request before it is untouched.
  const auto* req = reinterpret_cast<const mvmm_mmu_update*>(b.entries()[0].args[0]);
  EXPECT_EQ(req->ptr, 0x5008u);
}

TEST(MulticallBatchTest, FullBufferRefusesAndClearEmpties) {
  MulticallBatch b;
  for (uint32_t i = 0; i < MulticallBatch::kCapacity; ++i)
    ASSERT_TRUE(b.Add(MVMM_HC_stack_switch, 0x10, i));
  EXPECT_TRUE(b.full());
  EXPECT_FALSE(b.Add(MVMM_HC_stack_switch, 0x10, 0));
  EXPECT_FALSE(b.AddMmuUpdate(0, 0));
  EXPECT_FALSE(b.AddNewBasePtr(0x10000));
  b.Clear();
  EXPECT_TRUE(b.empty());
}

TEST(MulticallBatchTest, CapacityIsWithinTheAbiLimit) {
  static_assert(MulticallBatch::kCapacity <= MVMM_MULTICALL_MAX_ENTRIES);
  EXPECT_LE(MulticallBatch::kCapacity, MVMM_MULTICALL_MAX_ENTRIES);
}

}  // namespace
}  // namespace guest
