#include <gtest/gtest.h>

#include <vector>

#include "tests/hypercalls/expect.h"

namespace minivmm {
namespace {

using testing::CheckedVm;
using testing::kRamSize;

constexpr uint64_t kOps = 0x6000;       // op list
constexpr uint64_t kList = 0x8000;      // a multicall list
constexpr uint64_t kBootCr3 = 0x10000;  // PlainVcpuState's initial CR3
constexpr uint64_t kPml4A = 0x20000;
constexpr uint64_t kPml4B = 0x21000;

mvmm_mmuext_op BasePtr(uint64_t gpa) { return {MVMM_MMUEXT_NEW_BASEPTR, 0, gpa >> 12, 0}; }

class MmuextOpTest : public ::testing::Test {
 protected:
  void PokeOps(uint64_t at, const std::vector<mvmm_mmuext_op>& ops) {
    for (size_t i = 0; i < ops.size(); ++i) {
      vm_.Poke64(at + 24 * i, ops[i].cmd | (uint64_t{ops[i].reserved} << 32));
      vm_.Poke64(at + 24 * i + 8, ops[i].arg1);
      vm_.Poke64(at + 24 * i + 16, ops[i].arg2);
    }
  }
  HypercallResult OpResult(const std::vector<mvmm_mmuext_op>& ops) {
    PokeOps(kOps, ops);
    return vm_.Result(MVMM_HC_mmuext_op, kOps, ops.size());
  }
  int64_t Op(const std::vector<mvmm_mmuext_op>& ops) { return OpResult(ops).value; }
  // Asserts that nothing changed: CR3 and the counted cr3 writes.
  void ExpectUnchanged() {
    EXPECT_EQ(vm_.vcpu.cr3, kBootCr3);
    EXPECT_EQ(vm_.cause(Cause::kCr3Write).ops, 0u);
  }
  CheckedVm vm_;
};

TEST_F(MmuextOpTest, NewBasePtrLoadsCr3AndReturnsCount) {
  const HypercallResult result = OpResult({BasePtr(kPml4A)});
  EXPECT_EQ(testing::AbiRow(result.value, "mmuext_op.ok"), 1);
  EXPECT_EQ(result.refusal, nullptr);
  EXPECT_EQ(vm_.vcpu.cr3, kPml4A);
}

TEST_F(MmuextOpTest, OpsRunInOrderAndTheLastBaseStays) {
  EXPECT_EQ(Op({BasePtr(kPml4A), BasePtr(kPml4B)}), 2);
  EXPECT_EQ(vm_.vcpu.cr3, kPml4B);
}

TEST_F(MmuextOpTest, TheBootPageTablesAndTheLastPageOfRamMayBeLoaded) {
  EXPECT_EQ(Op({BasePtr(kRamSize - 4096)}), 1);
  EXPECT_EQ(vm_.vcpu.cr3, kRamSize - 4096);
  EXPECT_EQ(Op({BasePtr(kBootCr3)}), 1);
  EXPECT_EQ(vm_.vcpu.cr3, kBootCr3);
}

// docs/hypercalls.md: count 0 returns 0 without looking at the list, even
// one outside RAM; an exit of cr3_write with no op, no error.
TEST_F(MmuextOpTest, ZeroCountIsNoopEvenWithBadList) {
  for (uint64_t list : {~uint64_t{0}, uint64_t{kRamSize}, uint64_t{MVMM_GDT_GPA}})
    EXPECT_EQ(vm_.Call(MVMM_HC_mmuext_op, list, 0), 0) << list;
  ExpectUnchanged();
  EXPECT_EQ(vm_.cause(Cause::kCr3Write).ops, 0u);
  EXPECT_EQ(vm_.cause(Cause::kCr3Write).exits, 3u);
  EXPECT_EQ(vm_.stats.hc_errors[MVMM_HC_mmuext_op], 0u);
}

TEST_F(MmuextOpTest, MaximumCountIsAccepted) {
  std::vector<mvmm_mmuext_op> ops(MVMM_MMUEXT_OP_MAX_OPS, BasePtr(kPml4A));
  ops.back() = BasePtr(kPml4B);
  EXPECT_EQ(Op(ops), MVMM_MMUEXT_OP_MAX_OPS);
  EXPECT_EQ(vm_.vcpu.cr3, kPml4B);
  EXPECT_EQ(vm_.cause(Cause::kCr3Write).ops, MVMM_MMUEXT_OP_MAX_OPS);
}

TEST_F(MmuextOpTest, OverMaximumCountIsE2big) {
  PokeOps(kOps, {BasePtr(kPml4A)});
  const HypercallResult result = vm_.Result(MVMM_HC_mmuext_op, kOps, MVMM_MMUEXT_OP_MAX_OPS + 1);
  EXPECT_EQ(testing::AbiRow(result.value, "mmuext_op.E2BIG"), -MVMM_E2BIG);
  EXPECT_STREQ(result.refusal, "count above MVMM_MMUEXT_OP_MAX_OPS");
  EXPECT_EQ(vm_.Call(MVMM_HC_mmuext_op, kOps, 1ull << 60), -MVMM_E2BIG);  // count*24 wraps
  EXPECT_EQ(vm_.Call(MVMM_HC_mmuext_op, kOps, ~0ull), -MVMM_E2BIG);
  ExpectUnchanged();
}

TEST_F(MmuextOpTest, ListOutsideRamIsEfault) {
  const HypercallResult result = vm_.Result(MVMM_HC_mmuext_op, kRamSize - 24, 2);  // crosses end
  EXPECT_EQ(testing::AbiRow(result.value, "mmuext_op.EFAULT"), -MVMM_EFAULT);
  EXPECT_STREQ(result.refusal, "op list outside RAM");
  EXPECT_EQ(vm_.Call(MVMM_HC_mmuext_op, ~0ull - 15, 1), -MVMM_EFAULT);  // wraps
  EXPECT_EQ(vm_.Call(MVMM_HC_mmuext_op, MVMM_GDT_GPA, 1), -MVMM_EFAULT);
  ExpectUnchanged();
}

TEST_F(MmuextOpTest, ListEndingAtEndOfRamIsAccepted) {
  PokeOps(kRamSize - 24, {BasePtr(kPml4A)});
  EXPECT_EQ(vm_.Call(MVMM_HC_mmuext_op, kRamSize - 24, 1), 1);
  EXPECT_EQ(vm_.vcpu.cr3, kPml4A);
}

TEST_F(MmuextOpTest, EveryBadOpGetsItsErrnoAndChangesNothing) {
  struct Bad {
    mvmm_mmuext_op op;
    const char* row;
  };
  const Bad bad[] = {
      {{0, 0, kPml4A >> 12, 0}, "mmuext_op.EINVAL"},            // MMUEXT_PIN_L1_TABLE
      {{6, 0, kPml4A >> 12, 0}, "mmuext_op.EINVAL"},            // MMUEXT_TLB_FLUSH_LOCAL
      {{0xffffffffu, 0, kPml4A >> 12, 0}, "mmuext_op.EINVAL"},  // no command
      {{MVMM_MMUEXT_NEW_BASEPTR, 1, kPml4A >> 12, 0}, "mmuext_op.EINVAL.2"},  // reserved
      {{MVMM_MMUEXT_NEW_BASEPTR, 0, kPml4A >> 12, 1}, "mmuext_op.EINVAL.2"},  // arg2
      {BasePtr(kRamSize), "mmuext_op.EFAULT.2"},                              // past RAM
      {BasePtr(MVMM_GDT_GPA), "mmuext_op.EFAULT.2"},                          // the GDT page
      {{MVMM_MMUEXT_NEW_BASEPTR, 0, ~0ull, 0}, "mmuext_op.EFAULT.2"},         // address overflows
      {{MVMM_MMUEXT_NEW_BASEPTR, 0, 1ull << 52, 0}, "mmuext_op.EFAULT.2"},
      {BasePtr(0), "mmuext_op.EPERM"},                   // page 0
      {BasePtr(MVMM_BOOT_INFO_GPA), "mmuext_op.EPERM"},  // the VMM's pages
      {BasePtr(MVMM_CMDLINE_GPA), "mmuext_op.EPERM"},
      {BasePtr(MVMM_TSS_GPA), "mmuext_op.EPERM"},
      {BasePtr(MVMM_PAGE_TABLES_GPA - 4096), "mmuext_op.EPERM"},
  };
  for (const Bad& b : bad) {
    // Alone, and after a good op: all or nothing, so the good one does not
    // run either.
    SCOPED_TRACE(::testing::Message() << b.op.cmd << " " << b.op.arg1);
    testing::AbiRow(Op({b.op}), b.row);
    testing::AbiRow(Op({BasePtr(kPml4A), b.op, BasePtr(kPml4B)}), b.row);
    ExpectUnchanged();
  }
  EXPECT_EQ(vm_.cause(Cause::kCr3Write).exits, 2 * std::size(bad));
  EXPECT_EQ(vm_.stats.hc_errors[MVMM_HC_mmuext_op], 2 * std::size(bad));
}

TEST_F(MmuextOpTest, TheFirstBadOpInListOrderGivesTheErrno) {
  EXPECT_EQ(Op({BasePtr(kPml4A), BasePtr(0), BasePtr(kRamSize)}), -MVMM_EPERM);
  EXPECT_EQ(Op({BasePtr(kRamSize), BasePtr(0)}), -MVMM_EFAULT);
  ExpectUnchanged();
}

TEST_F(MmuextOpTest, CountsBaseLoadsAsCr3Writes) {
  Op({BasePtr(kPml4A), BasePtr(kPml4B)});
  Op({BasePtr(0)});
  EXPECT_EQ(vm_.cause(Cause::kCr3Write).ops, 2u);
  EXPECT_EQ(vm_.cause(Cause::kCr3Write).exits, 2u);
  EXPECT_EQ(vm_.stats.hc_ops[MVMM_HC_mmuext_op], 2u);
  EXPECT_EQ(vm_.stats.hc_exits[MVMM_HC_mmuext_op], 2u);
  EXPECT_EQ(vm_.stats.hc_errors[MVMM_HC_mmuext_op], 1u);
}

TEST_F(MmuextOpTest, InsideAMulticallItLoadsCr3AndIsAnOpButNotAnExit) {
  PokeOps(kOps, {BasePtr(kPml4A)});
  PokeOps(kOps + 24, {BasePtr(0)});
  // Entry 0: a good mmuext_op, entry 1: a refused one, entry 2: good again.
  const uint64_t entries[][3] = {{MVMM_HC_mmuext_op, kOps, 1},
                                 {MVMM_HC_mmuext_op, kOps + 24, 1},
                                 {MVMM_HC_fpu_taskswitch, 1, 0}};
  for (int i = 0; i < 3; ++i) {
    vm_.Poke64(kList + 64 * i, entries[i][0]);
    vm_.Poke64(kList + 64 * i + 16, entries[i][1]);
    vm_.Poke64(kList + 64 * i + 24, entries[i][2]);
  }
  EXPECT_EQ(vm_.Call(MVMM_HC_multicall, kList, 3), 0);
  EXPECT_EQ(vm_.vcpu.cr3, kPml4A);
  EXPECT_EQ(vm_.Peek64(kList + 8), 1u);
  EXPECT_EQ(static_cast<int64_t>(vm_.Peek64(kList + 64 + 8)), -MVMM_EPERM);
  EXPECT_EQ(vm_.cause(Cause::kCr3Write).ops, 1u);
  EXPECT_EQ(vm_.cause(Cause::kCr3Write).exits, 0u);
  EXPECT_EQ(vm_.stats.hc_ops[MVMM_HC_mmuext_op], 2u);
  EXPECT_EQ(vm_.stats.hc_exits[MVMM_HC_mmuext_op], 0u);
}

TEST_F(MmuextOpTest, FromCpl3IsEpermAndLoadsNothing) {
  PokeOps(kOps, {BasePtr(kPml4A)});
  vm_.SetHypercallRegs(MVMM_HC_mmuext_op, {kOps, 1});
  vm_.vcpu.cpl = 3;
  EXPECT_EQ(vm_.dispatcher.HandleExit(vm_.env), -MVMM_EPERM);
  EXPECT_EQ(vm_.stats.hc_refused_cpl3, 1u);
  ExpectUnchanged();
}

}  // namespace
}  // namespace minivmm
