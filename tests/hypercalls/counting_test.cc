#include <gtest/gtest.h>

#include "hypercalls/dispatcher.h"
#include "minivmm_abi/boot.h"

namespace minivmm {
namespace {

const CauseCount& Of(const ExitStats& stats, Cause cause) {
  return stats.causes[static_cast<int>(cause)];
}

TEST(CauseOfTest, TableOfCauses) {
  struct Row {
    uint64_t nr;
    HypercallArgs args;
    int64_t result;
    std::optional<Cause> cause;
    uint64_t ops;
  };
  const Row rows[] = {
      {MVMM_HC_set_if, {1}, 0, Cause::kIfSet, 1},
      {MVMM_HC_set_if, {1}, 1, Cause::kIfSet, 1},
      {MVMM_HC_set_if, {0}, 1, Cause::kIfClear, 1},
      {MVMM_HC_set_if, {2}, -MVMM_EINVAL, std::nullopt, 0},
      {MVMM_HC_force_evtchn_callback, {7, 7}, 0, Cause::kIfSet, 1},
      {MVMM_HC_force_evtchn_callback, {}, -MVMM_EINVAL, Cause::kIfSet, 0},
      {MVMM_HC_vcpu_op, {MVMM_VCPUOP_REGISTER_VCPU_INFO}, 0, std::nullopt, 0},
      {MVMM_HC_fpu_taskswitch, {1}, 0, Cause::kCr0Write, 1},
      {MVMM_HC_fpu_taskswitch, {5}, -MVMM_EINVAL, Cause::kCr0Write, 0},
      {MVMM_HC_write_cr0, {0}, 0, Cause::kCr0Write, 1},
      {MVMM_HC_write_cr0, {0}, -MVMM_EPERM, Cause::kCr0Write, 0},
      {MVMM_HC_update_descriptor, {}, 0, Cause::kDescriptorUpdate, 1},
      {MVMM_HC_update_descriptor, {}, -MVMM_EPERM, Cause::kDescriptorUpdate, 0},
      {MVMM_HC_mmu_update, {0, 9}, 7, Cause::kPageTableUpdate, 7},
      {MVMM_HC_mmu_update, {0, 9}, -MVMM_EFAULT, Cause::kPageTableUpdate, 0},
      {MVMM_HC_mmuext_op, {0, 3}, 3, Cause::kCr3Write, 3},
      {MVMM_HC_mmuext_op, {0, 3}, -MVMM_EPERM, Cause::kCr3Write, 0},
      {MVMM_HC_multicall, {0, 12}, 0, Cause::kMulticall, 12},
      {MVMM_HC_multicall, {0, 513}, -MVMM_E2BIG, Cause::kMulticall, 0},
      {MVMM_HC_send_ipi, {0b1011, MVMM_IPI_VECTOR}, 3, Cause::kIpi, 3},
      {MVMM_HC_send_ipi, {0, MVMM_IPI_VECTOR}, -MVMM_EINVAL, Cause::kIpi, 0},
      {MVMM_HC_flush_tlb_others, {0b1110}, 1, Cause::kTlbFlush, 3},
      {MVMM_HC_flush_tlb_others, {0b1110}, 0, Cause::kTlbFlush, 3},
      {MVMM_HC_flush_tlb_others, {0b1110}, -MVMM_EINVAL, Cause::kTlbFlush, 0},
      {MVMM_HC_lock_wait, {0x5000, 7}, MVMM_LOCK_WAIT_CHANGED, Cause::kLockWait, 1},
      {MVMM_HC_lock_wait, {0x5000, 7}, MVMM_LOCK_WAIT_INTERRUPT, Cause::kLockWait, 1},
      {MVMM_HC_lock_wait, {0x5001, 7}, -MVMM_EINVAL, Cause::kLockWait, 0},
      {MVMM_HC_lock_kick, {1}, 0, Cause::kLockKick, 1},
      {MVMM_HC_lock_kick, {9}, -MVMM_EINVAL, Cause::kLockKick, 0},
      {MVMM_HC_sched_op, {MVMM_SCHEDOP_YIELD}, 0, Cause::kYield, 1},
      {MVMM_HC_sched_op, {MVMM_SCHEDOP_YIELD_TO, 1}, 0, Cause::kYield, 1},
      {MVMM_HC_sched_op, {MVMM_SCHEDOP_YIELD_TO, 9}, -MVMM_EINVAL, Cause::kYield, 0},
      {MVMM_HC_console_io, {}, 0, std::nullopt, 0},
      {MVMM_HC_sched_op, {MVMM_SCHEDOP_BLOCK}, 0, std::nullopt, 0},
      {MVMM_HC_set_segment_base, {MVMM_SEGBASE_FS, 0x1000}, 0, Cause::kFsBase, 1},
      {MVMM_HC_set_segment_base, {9, 0x1000}, -MVMM_EINVAL, Cause::kFsBase, 0},
      {MVMM_HC_stack_switch, {MVMM_SEL_KERNEL_DS, 0x8000}, 0, Cause::kSp0Load, 1},
      {MVMM_HC_stack_switch, {0, 0x8000}, -MVMM_EINVAL, Cause::kSp0Load, 0},
      {MVMM_HC_set_timer_op, {}, 0, std::nullopt, 0},
      {MVMM_HC_report, {}, 0, std::nullopt, 0},
      {MVMM_HC_USER_FIRST, {}, 0, std::nullopt, 0},
  };
  for (const Row& row : rows) {
    const std::optional<CauseOps> got = CauseOf(row.nr, row.args, row.result);
    ASSERT_EQ(got.has_value(), row.cause.has_value()) << row.nr;
    if (!got) continue;
    EXPECT_EQ(got->cause, *row.cause) << row.nr;
    EXPECT_EQ(got->ops, row.ops) << row.nr;
  }
}

TEST(MulticallHistogramBucketTest, PowersOfTwo) {
  EXPECT_EQ(MulticallHistogramBucket(0), 0);
  EXPECT_EQ(MulticallHistogramBucket(1), 1);
  EXPECT_EQ(MulticallHistogramBucket(2), 2);
  EXPECT_EQ(MulticallHistogramBucket(3), 2);
  EXPECT_EQ(MulticallHistogramBucket(4), 3);
  EXPECT_EQ(MulticallHistogramBucket(255), 8);
  EXPECT_EQ(MulticallHistogramBucket(256), 9);
  EXPECT_EQ(MulticallHistogramBucket(511), 9);
  EXPECT_EQ(MulticallHistogramBucket(512), 10);
  EXPECT_EQ(MulticallHistogramBucket(~0ull), kMulticallHistogramBuckets - 1);
}

TEST(CountHypercallTest, DirectCallCountsExitOpAndCauseExit) {
  ExitStats stats;
  CountHypercall(stats, MVMM_HC_set_if, {1}, 0, /*direct=*/true);
  EXPECT_EQ(stats.hc_exits[MVMM_HC_set_if], 1u);
  EXPECT_EQ(stats.hc_ops[MVMM_HC_set_if], 1u);
  EXPECT_EQ(stats.hc_errors[MVMM_HC_set_if], 0u);
  EXPECT_EQ(Of(stats, Cause::kIfSet).ops, 1u);
  EXPECT_EQ(Of(stats, Cause::kIfSet).exits, 1u);
}

TEST(CountHypercallTest, MulticallEntryCountsOpButNoExit) {
  ExitStats stats;
  CountHypercall(stats, MVMM_HC_fpu_taskswitch, {1}, 0, /*direct=*/false);
  EXPECT_EQ(stats.hc_exits[MVMM_HC_fpu_taskswitch], 0u);
  EXPECT_EQ(stats.hc_ops[MVMM_HC_fpu_taskswitch], 1u);
  EXPECT_EQ(Of(stats, Cause::kCr0Write).ops, 1u);
  EXPECT_EQ(Of(stats, Cause::kCr0Write).exits, 0u);
}

TEST(CountHypercallTest, FailedCallCountsErrorAndExitButNoCauseOp) {
  ExitStats stats;
  CountHypercall(stats, MVMM_HC_write_cr0, {0}, -MVMM_EPERM, /*direct=*/true);
  EXPECT_EQ(stats.hc_errors[MVMM_HC_write_cr0], 1u);
  EXPECT_EQ(Of(stats, Cause::kCr0Write).ops, 0u);
  EXPECT_EQ(Of(stats, Cause::kCr0Write).exits, 1u);
}

TEST(CountHypercallTest, AcceptedMulticallFillsHistogram) {
  ExitStats stats;
  CountHypercall(stats, MVMM_HC_multicall, {0, 3}, 0, /*direct=*/true);
  CountHypercall(stats, MVMM_HC_multicall, {0, 0}, 0, /*direct=*/true);
  CountHypercall(stats, MVMM_HC_multicall, {0, 999}, -MVMM_E2BIG, /*direct=*/true);
  EXPECT_EQ(stats.multicall_entries_histogram[2], 1u);
  EXPECT_EQ(stats.multicall_entries_histogram[0], 1u);
  EXPECT_EQ(stats.multicall_entries_histogram[10], 0u);
  EXPECT_EQ(Of(stats, Cause::kMulticall).ops, 3u);
  EXPECT_EQ(Of(stats, Cause::kMulticall).exits, 3u);
}

TEST(CountHypercallTest, FlushTlbOthersCountsTheTargetsItDidNotKickAsDeferred) {
  ExitStats stats;
  CountHypercall(stats, MVMM_HC_flush_tlb_others, {0b1110}, 1, /*direct=*/true);
  CountHypercall(stats, MVMM_HC_flush_tlb_others, {0b0110}, 0, /*direct=*/false);
  CountHypercall(stats, MVMM_HC_flush_tlb_others, {0b0001}, -MVMM_EINVAL, /*direct=*/true);
  EXPECT_EQ(stats.tlb_flushes_deferred, 2u + 2u);
  EXPECT_EQ(Of(stats, Cause::kTlbFlush).ops, 3u + 2u);
  EXPECT_EQ(Of(stats, Cause::kTlbFlush).exits, 2u);
  EXPECT_EQ(stats.hc_errors[MVMM_HC_flush_tlb_others], 1u);
}

}  // namespace
}  // namespace minivmm
