// fpu_taskswitch, write_cr0 and set_if: the handlers that change vCPU state
// through VcpuState (synced registers, no ioctl).
#include <gtest/gtest.h>

#include "tests/hypercalls/expect.h"

namespace minivmm {
namespace {

using testing::CheckedVm;

// The boot CR0 of docs/design.md "Boot": PE|MP|ET|NE|WP|PG.
constexpr uint64_t kBootCr0 = 0x80050023;
constexpr uint64_t kCr0Pe = 1ull << 0, kCr0Et = 1ull << 4, kCr0Ne = 1ull << 5, kCr0Wp = 1ull << 16,
                   kCr0Cd = 1ull << 30, kCr0Pg = 1ull << 31;

// A VcpuState that counts CR0 writes, to show unchanged values are not written.
class CountingVcpu final : public VcpuState {
 public:
  CountingVcpu() : VcpuState(regs, &dirty, 1, &cpl) {}
  uint64_t Cr0() const override { return cr0; }
  void SetCr0(uint64_t value) override {
    ++cr0_writes;
    cr0 = value;
  }
  uint64_t Cr3() const override { return cr3; }
  void SetCr3(uint64_t value) override { cr3 = value; }
  uint64_t FsBase() const override { return fs_base; }
  void SetFsBase(uint64_t value) override { fs_base = value; }
  RegWord regs[kRegCount] = {};
  RegWord dirty = 0;
  uint8_t cpl = 0;
  uint64_t cr0 = 0;
  uint64_t cr3 = 0;
  uint64_t fs_base = 0;
  int cr0_writes = 0;
};

class CpuStateHandlersTest : public ::testing::Test {
 protected:
  void SetUp() override { vm_.vcpu.cr0 = kBootCr0; }
  CheckedVm vm_;
};

TEST_F(CpuStateHandlersTest, FpuTaskswitchSetsTs) {
  const HypercallResult result = vm_.Result(MVMM_HC_fpu_taskswitch, 1);
  EXPECT_EQ(testing::AbiRow(result.value, "fpu_taskswitch.ok"), 0);
  EXPECT_EQ(result.refusal, nullptr);
  EXPECT_EQ(vm_.vcpu.cr0, kBootCr0 | MVMM_CR0_TS);
}

TEST_F(CpuStateHandlersTest, FpuTaskswitchClearsTs) {
  vm_.vcpu.cr0 = kBootCr0 | MVMM_CR0_TS;
  EXPECT_EQ(vm_.Call(MVMM_HC_fpu_taskswitch, 0), 0);
  EXPECT_EQ(vm_.vcpu.cr0, kBootCr0);
}

TEST_F(CpuStateHandlersTest, FpuTaskswitchOtherValueIsEinval) {
  const HypercallResult result = vm_.Result(MVMM_HC_fpu_taskswitch, 2);
  EXPECT_EQ(testing::AbiRow(result.value, "fpu_taskswitch.EINVAL"), -MVMM_EINVAL);
  EXPECT_STREQ(result.refusal, "set is neither 0 nor 1");
  EXPECT_EQ(vm_.Call(MVMM_HC_fpu_taskswitch, ~0ull), -MVMM_EINVAL);
  EXPECT_EQ(vm_.vcpu.cr0, kBootCr0);
}

// A set takes only reason 0; a clear takes 0 or MVMM_TS_CLEAR_FOR_NM (1).
TEST_F(CpuStateHandlersTest, FpuTaskswitchUnknownReasonIsEinval) {
  const HypercallResult set = vm_.Result(MVMM_HC_fpu_taskswitch, 1, MVMM_TS_CLEAR_FOR_NM);
  EXPECT_EQ(testing::AbiRow(set.value, "fpu_taskswitch.EINVAL.2"), -MVMM_EINVAL);
  EXPECT_STREQ(set.refusal, "unknown reason for the TS change");
  vm_.vcpu.cr0 = kBootCr0 | MVMM_CR0_TS;
  for (uint64_t reason : {uint64_t{2}, ~uint64_t{0}}) {
    EXPECT_EQ(
        testing::AbiRow(vm_.Call(MVMM_HC_fpu_taskswitch, 0, reason), "fpu_taskswitch.EINVAL.2"),
        -MVMM_EINVAL)
        << reason;
  }
  EXPECT_EQ(vm_.vcpu.cr0, kBootCr0 | MVMM_CR0_TS);  // refused: TS as it was
}

TEST_F(CpuStateHandlersTest, WriteCr0MayChangeMpEmTs) {
  const uint64_t value = (kBootCr0 & ~MVMM_CR0_MP) | MVMM_CR0_EM | MVMM_CR0_TS;
  const HypercallResult result = vm_.Result(MVMM_HC_write_cr0, value);
  EXPECT_EQ(testing::AbiRow(result.value, "write_cr0.ok"), 0);
  EXPECT_EQ(result.refusal, nullptr);
  EXPECT_EQ(vm_.vcpu.cr0, value);
  EXPECT_EQ(vm_.Call(MVMM_HC_write_cr0, kBootCr0), 0);
  EXPECT_EQ(vm_.vcpu.cr0, kBootCr0);
}

TEST_F(CpuStateHandlersTest, WriteCr0ProtectedBitsArePermissionDenied) {
  for (uint64_t bit :
       {kCr0Pe, kCr0Et, kCr0Ne, kCr0Wp, kCr0Cd, kCr0Pg, uint64_t{1} << 32, uint64_t{1} << 63}) {
    EXPECT_EQ(vm_.Call(MVMM_HC_write_cr0, kBootCr0 ^ bit), -MVMM_EPERM) << std::hex << bit;
    EXPECT_EQ(vm_.Call(MVMM_HC_write_cr0, (kBootCr0 ^ bit) | MVMM_CR0_TS), -MVMM_EPERM);
  }
  EXPECT_EQ(vm_.vcpu.cr0, kBootCr0);
}

TEST_F(CpuStateHandlersTest, WriteCr0ZeroIsPermissionDenied) {
  const HypercallResult result = vm_.Result(MVMM_HC_write_cr0, 0);
  EXPECT_EQ(testing::AbiRow(result.value, "write_cr0.EPERM"), -MVMM_EPERM);
  EXPECT_STREQ(result.refusal, "would change CR0 bits other than MP, EM, TS");
  EXPECT_EQ(vm_.vcpu.cr0, kBootCr0);
}

TEST_F(CpuStateHandlersTest, UnchangedCr0IsNotWritten) {
  CountingVcpu vcpu;
  vcpu.cr0 = kBootCr0 | MVMM_CR0_TS;
  ExitContext exit{vcpu, vm_.control, vm_.stats};
  HypercallEnv env{vm_.memory, vm_.gdt, exit};
  EXPECT_EQ(vm_.dispatcher.Dispatch(env, MVMM_HC_fpu_taskswitch, {1}, true).value, 0);
  EXPECT_EQ(vm_.dispatcher.Dispatch(env, MVMM_HC_write_cr0, {kBootCr0 | MVMM_CR0_TS}, true).value,
            0);
  EXPECT_EQ(vcpu.cr0_writes, 0);
  EXPECT_EQ(vm_.dispatcher.Dispatch(env, MVMM_HC_fpu_taskswitch, {0}, true).value, 0);
  EXPECT_EQ(vcpu.cr0_writes, 1);
}

TEST_F(CpuStateHandlersTest, SetIfReturnsPreviousAndSets) {
  vm_.vcpu.Set(Reg::kRflags, 0x2);
  const HypercallResult result = vm_.Result(MVMM_HC_set_if, 1);
  EXPECT_EQ(testing::AbiRow(result.value, "set_if.ok"), 0);
  EXPECT_EQ(result.refusal, nullptr);
  EXPECT_EQ(vm_.vcpu.Get(Reg::kRflags), 0x2 | MVMM_RFLAGS_IF);
  EXPECT_EQ(vm_.Call(MVMM_HC_set_if, 1), 1);
  EXPECT_EQ(vm_.vcpu.Get(Reg::kRflags), 0x2 | MVMM_RFLAGS_IF);
}

TEST_F(CpuStateHandlersTest, SetIfClearsAndKeepsOtherFlags) {
  const uint64_t flags = 0x2 | MVMM_RFLAGS_IF | 0x1 /*CF*/ | 0x40 /*ZF*/;
  vm_.vcpu.Set(Reg::kRflags, flags);
  EXPECT_EQ(vm_.Call(MVMM_HC_set_if, 0), 1);
  EXPECT_EQ(vm_.vcpu.Get(Reg::kRflags), flags & ~MVMM_RFLAGS_IF);
  EXPECT_EQ(vm_.Call(MVMM_HC_set_if, 0), 0);
}

TEST_F(CpuStateHandlersTest, UnchangedIfDoesNotDirtyRegisters) {
  vm_.vcpu.Set(Reg::kRflags, 0x2 | MVMM_RFLAGS_IF);
  vm_.vcpu.dirty = 0;
  EXPECT_EQ(vm_.Call(MVMM_HC_set_if, 1), 1);
  EXPECT_EQ(vm_.vcpu.dirty, 0u);  // no store: the next entry syncs nothing
  EXPECT_EQ(vm_.Call(MVMM_HC_set_if, 0), 1);
  EXPECT_EQ(vm_.vcpu.dirty, 1u);
}

TEST_F(CpuStateHandlersTest, SetIfOtherValueIsEinval) {
  vm_.vcpu.Set(Reg::kRflags, 0x2);
  const HypercallResult result = vm_.Result(MVMM_HC_set_if, 2);
  EXPECT_EQ(testing::AbiRow(result.value, "set_if.EINVAL"), -MVMM_EINVAL);
  EXPECT_STREQ(result.refusal, "enable is neither 0 nor 1");
  EXPECT_EQ(vm_.Call(MVMM_HC_set_if, ~0ull), -MVMM_EINVAL);
  EXPECT_EQ(vm_.vcpu.Get(Reg::kRflags), 0x2u);
}

TEST_F(CpuStateHandlersTest, CausesAreCounted) {
  vm_.Call(MVMM_HC_set_if, 1);
  vm_.Call(MVMM_HC_set_if, 0);
  vm_.Call(MVMM_HC_set_if, 0);
  vm_.Call(MVMM_HC_fpu_taskswitch, 1);
  vm_.Call(MVMM_HC_write_cr0, 0);  // refused: an exit, no operation
  EXPECT_EQ(vm_.cause(Cause::kIfSet).ops, 1u);
  EXPECT_EQ(vm_.cause(Cause::kIfSet).exits, 1u);
  EXPECT_EQ(vm_.cause(Cause::kIfClear).ops, 2u);
  EXPECT_EQ(vm_.cause(Cause::kIfClear).exits, 2u);
  EXPECT_EQ(vm_.cause(Cause::kCr0Write).ops, 1u);
  EXPECT_EQ(vm_.cause(Cause::kCr0Write).exits, 2u);
}


// set_segment_base: the FS base only, canonical bases only; an unchanged
// base is not written again.
TEST_F(CpuStateHandlersTest, SetSegmentBaseWritesTheFsBase) {
  const uint64_t base = 0x00007fff12345000;
  const HypercallResult result = vm_.Result(MVMM_HC_set_segment_base, MVMM_SEGBASE_FS, base);
  EXPECT_EQ(testing::AbiRow(result.value, "set_segment_base.ok"), 0);
  EXPECT_EQ(result.refusal, nullptr);
  EXPECT_EQ(vm_.vcpu.fs_base, base);
  const uint64_t high = 0xffff800000001000;  // canonical with bit 47 set
  EXPECT_EQ(vm_.Call(MVMM_HC_set_segment_base, MVMM_SEGBASE_FS, high), 0);
  EXPECT_EQ(vm_.vcpu.fs_base, high);
  EXPECT_EQ(vm_.Call(MVMM_HC_set_segment_base, MVMM_SEGBASE_FS, 0), 0);
  EXPECT_EQ(vm_.vcpu.fs_base, 0u);
}
TEST_F(CpuStateHandlersTest, SetSegmentBaseOfAnotherSegmentIsInvalid) {
  vm_.vcpu.fs_base = 0x1000;
  // Xen's SEGBASE_GS_USER, SEGBASE_GS_KERNEL, SEGBASE_GS_USER_SEL, and beyond.
  for (uint64_t which : {1ull, 2ull, 3ull, 4ull, ~0ull}) {
    const HypercallResult result = vm_.Result(MVMM_HC_set_segment_base, which, 0x2000);
    EXPECT_EQ(testing::AbiRow(result.value, "set_segment_base.EINVAL"), -MVMM_EINVAL) << which;
    EXPECT_STREQ(result.refusal, "not SEGBASE_FS");
  }
  EXPECT_EQ(vm_.vcpu.fs_base, 0x1000u);
}
TEST_F(CpuStateHandlersTest, SetSegmentBaseNonCanonicalIsInvalid) {
  vm_.vcpu.fs_base = 0x1000;
  for (uint64_t base : {0x0000800000000000ull, 0x8000000000000000ull, 0xffff7fffffffffffull,
                        0x0001000000000000ull}) {
    const HypercallResult result = vm_.Result(MVMM_HC_set_segment_base, MVMM_SEGBASE_FS, base);
    EXPECT_EQ(testing::AbiRow(result.value, "set_segment_base.EINVAL.2"), -MVMM_EINVAL)
        << std::hex << base;
    EXPECT_STREQ(result.refusal, "base not canonical");
  }
  EXPECT_EQ(vm_.vcpu.fs_base, 0x1000u);
}

}  // namespace
}  // namespace minivmm
