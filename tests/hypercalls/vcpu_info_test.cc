// vcpu_op(register_vcpu_info) and force_evtchn_callback: the two hypercalls
// of the shared-memory interrupt flag (minivmm_abi/boot.h).
#include <gtest/gtest.h>

#include <cstddef>
#include <optional>

#include "tests/hypercalls/expect.h"

namespace minivmm {
namespace {

using testing::CheckedVm;

constexpr uint64_t kInfo = MVMM_VCPU_INFO_GPA;
constexpr uint64_t kPendingAt = kInfo + offsetof(mvmm_vcpu_info, evtchn_upcall_pending);
constexpr uint64_t kMaskAt = kInfo + offsetof(mvmm_vcpu_info, evtchn_upcall_mask);

int64_t Register(CheckedVm& vm, uint64_t gpa, uint64_t vcpu = 0,
                 uint64_t cmd = MVMM_VCPUOP_REGISTER_VCPU_INFO) {
  return vm.Call(MVMM_HC_vcpu_op, cmd, vcpu, gpa);
}

uint8_t Byte(const CheckedVm& vm, uint64_t gpa) { return vm.ram[gpa]; }

TEST(VcpuOpTest, RegistersAndClearsPendingButNotTheMask) {
  CheckedVm vm;
  vm.ram[kPendingAt] = 1;
  vm.ram[kMaskAt] = 1;
  EXPECT_EQ(testing::AbiRow(Register(vm, kInfo), "vcpu_op.ok"), 0);
  EXPECT_EQ(vm.control.vcpu_info_gpa, std::optional<uint64_t>(kInfo));
  EXPECT_EQ(Byte(vm, kPendingAt), 0);
  EXPECT_EQ(Byte(vm, kMaskAt), 1);
  EXPECT_EQ(vm.stats.hc_ops[MVMM_HC_vcpu_op], 1u);
  EXPECT_EQ(vm.stats.hc_errors[MVMM_HC_vcpu_op], 0u);
}

TEST(VcpuOpTest, LastWholeSlotOfRamIsAccepted) {
  CheckedVm vm;
  EXPECT_EQ(Register(vm, vm.ram.size() - sizeof(mvmm_vcpu_info)), 0);
}

struct BadRegistration {
  uint64_t cmd, vcpu, gpa;
  const char* row;
  const char* reason;
};

TEST(VcpuOpTest, BadInputIsRefusedWithNoStateChange) {
  CheckedVm vm;
  const uint64_t end = vm.ram.size();
  for (const BadRegistration& c : {
           BadRegistration{0, 0, kInfo, "vcpu_op.EINVAL", "unknown cmd"},
           BadRegistration{11, 0, kInfo, "vcpu_op.EINVAL", "unknown cmd"},
           BadRegistration{~0ull, 0, kInfo, "vcpu_op.EINVAL", "unknown cmd"},
           BadRegistration{10, 1, kInfo, "vcpu_op.ENOENT", "no such vCPU"},
           BadRegistration{10, ~0ull, kInfo, "vcpu_op.ENOENT", "no such vCPU"},
           BadRegistration{10, 0, kInfo + 1, "vcpu_op.EINVAL.2", "vcpu_info not 64-byte aligned"},
           BadRegistration{10, 0, kInfo + 32, "vcpu_op.EINVAL.2", "vcpu_info not 64-byte aligned"},
           BadRegistration{10, 0, ~0ull, "vcpu_op.EINVAL.2", "vcpu_info not 64-byte aligned"},
           BadRegistration{10, 0, end, "vcpu_op.EFAULT", "vcpu_info outside guest RAM"},
           BadRegistration{10, 0, MVMM_GDT_GPA, "vcpu_op.EFAULT", "vcpu_info outside guest RAM"},
           BadRegistration{10, 0, ~63ull, "vcpu_op.EFAULT", "vcpu_info outside guest RAM"},
       }) {
    SCOPED_TRACE(::testing::Message() << "cmd " << c.cmd << " vcpu " << c.vcpu << " gpa " << c.gpa);
    vm.ram[kPendingAt] = 1;
    const HypercallResult result = vm.Result(MVMM_HC_vcpu_op, c.cmd, c.vcpu, c.gpa);
    testing::AbiRow(result.value, c.row);
    EXPECT_STREQ(result.refusal, c.reason);
    EXPECT_FALSE(vm.control.vcpu_info_gpa.has_value());
    EXPECT_EQ(Byte(vm, kPendingAt), 1);
  }
}

TEST(VcpuOpTest, SecondRegistrationIsRefusedAndKeepsTheFirst) {
  CheckedVm vm;
  ASSERT_EQ(Register(vm, kInfo), 0);
  vm.ram[kPendingAt] = 1;
  const HypercallResult again =
      vm.Result(MVMM_HC_vcpu_op, MVMM_VCPUOP_REGISTER_VCPU_INFO, 0, kInfo + sizeof(mvmm_vcpu_info));
  EXPECT_EQ(testing::AbiRow(again.value, "vcpu_op.EINVAL.3"), -MVMM_EINVAL);
  EXPECT_STREQ(again.refusal, "vcpu_info already registered");
  EXPECT_EQ(vm.control.vcpu_info_gpa, std::optional<uint64_t>(kInfo));
  EXPECT_EQ(Byte(vm, kPendingAt), 1);
  // The same address twice is a second registration too.
  EXPECT_EQ(Register(vm, kInfo), -MVMM_EINVAL);
}

TEST(VcpuOpTest, HasNoCause) {
  CheckedVm vm;
  ASSERT_EQ(Register(vm, kInfo), 0);
  for (const CauseCount& c : vm.stats.causes) {
    EXPECT_EQ(c.ops, 0u);
    EXPECT_EQ(c.exits, 0u);
  }
}

TEST(VcpuOpTest, FromCpl3IsEpermAndRegistersNothing) {
  CheckedVm vm;
  vm.vcpu.cpl = 3;
  vm.SetHypercallRegs(MVMM_HC_vcpu_op, {MVMM_VCPUOP_REGISTER_VCPU_INFO, 0, kInfo, 0, 0});
  EXPECT_EQ(vm.dispatcher.HandleExit(vm.env), -MVMM_EPERM);
  EXPECT_FALSE(vm.control.vcpu_info_gpa.has_value());
  EXPECT_EQ(vm.stats.hc_refused_cpl3, 1u);
}

TEST(VcpuOpTest, RegistersFromAMulticallEntry) {
  CheckedVm vm;
  mvmm_multicall_entry entry{};
  entry.op = MVMM_HC_vcpu_op;
  entry.args[0] = MVMM_VCPUOP_REGISTER_VCPU_INFO;
  entry.args[2] = kInfo;
  constexpr uint64_t kList = 0x8000;
  ASSERT_TRUE(vm.memory.WriteObj(GuestAddress(kList), entry));
  EXPECT_EQ(vm.Call(MVMM_HC_multicall, kList, 1), 0);
  EXPECT_EQ(vm.control.vcpu_info_gpa, std::optional<uint64_t>(kInfo));
  EXPECT_EQ(vm.stats.hc_ops[MVMM_HC_vcpu_op], 1u);
  EXPECT_EQ(vm.stats.hc_exits[MVMM_HC_vcpu_op], 0u);
}

TEST(VcpuOpTest, RegistersOnlyForTheCallingVcpu) {
  CheckedVm vm;
  vm.exit.vcpu_id = 3;
  const HypercallResult other =
      vm.Result(MVMM_HC_vcpu_op, MVMM_VCPUOP_REGISTER_VCPU_INFO, 0, kInfo);
  EXPECT_EQ(other.value, -MVMM_ENOENT);
  EXPECT_STREQ(other.refusal, "no such vCPU");
  EXPECT_FALSE(vm.control.vcpu_info_gpa.has_value());
  EXPECT_EQ(Register(vm, kInfo, 3), 0);
  EXPECT_EQ(vm.control.vcpu_info_gpa, std::optional<uint64_t>(kInfo));
}

constexpr uint64_t kRunstate = 0x5008;

uint32_t State(const CheckedVm& vm, uint64_t gpa) {
  return vm.memory.ReadObj<uint32_t>(GuestAddress(gpa)).value();
}

TEST(VcpuOpRunstateTest, RegistersAndWritesRunningWithNoFlags) {
  CheckedVm vm;
  vm.exit.vcpu_id = 2;
  ASSERT_TRUE(vm.memory.WriteObj(GuestAddress(kRunstate), uint32_t{0xdead}));
  ASSERT_TRUE(vm.memory.WriteObj(GuestAddress(kRunstate + 4), uint32_t{MVMM_RUNSTATE_FLUSH_TLB}));
  EXPECT_EQ(Register(vm, kRunstate, 2, MVMM_VCPUOP_REGISTER_RUNSTATE_AREA), 0);
  EXPECT_EQ(vm.control.runstate_gpa, std::optional<uint64_t>(kRunstate));
  EXPECT_EQ(State(vm, kRunstate), MVMM_RUNSTATE_RUNNING);
  EXPECT_EQ(State(vm, kRunstate + offsetof(mvmm_vcpu_runstate, flags)), 0u);
  EXPECT_FALSE(vm.control.vcpu_info_gpa.has_value());
  EXPECT_EQ(vm.stats.hc_ops[MVMM_HC_vcpu_op], 1u);
  EXPECT_EQ(vm.stats.hc_errors[MVMM_HC_vcpu_op], 0u);
}

TEST(VcpuOpRunstateTest, BadInputIsRefusedWithNoStateChange) {
  CheckedVm vm;
  const uint64_t end = vm.ram.size();
  constexpr uint64_t kCmd = MVMM_VCPUOP_REGISTER_RUNSTATE_AREA;
  for (const BadRegistration& c : {
           BadRegistration{kCmd, 1, kRunstate, "vcpu_op.ENOENT", "no such vCPU"},
           BadRegistration{kCmd, 0, kRunstate + 4, "vcpu_op.EINVAL.2",
                           "runstate area not 8-byte aligned"},
           BadRegistration{kCmd, 0, end, "vcpu_op.EFAULT", "runstate area outside guest RAM"},
           BadRegistration{kCmd, 0, ~7ull, "vcpu_op.EFAULT", "runstate area outside guest RAM"},
       }) {
    SCOPED_TRACE(::testing::Message() << "vcpu " << c.vcpu << " gpa " << c.gpa);
    ASSERT_TRUE(vm.memory.WriteObj(GuestAddress(kRunstate), uint32_t{0xdead}));
    const HypercallResult result = vm.Result(MVMM_HC_vcpu_op, c.cmd, c.vcpu, c.gpa);
    testing::AbiRow(result.value, c.row);
    EXPECT_STREQ(result.refusal, c.reason);
    EXPECT_FALSE(vm.control.runstate_gpa.has_value());
    EXPECT_EQ(State(vm, kRunstate), 0xdeadu);
  }
}

TEST(VcpuOpRunstateTest, SecondRegistrationIsRefusedAndKeepsTheFirst) {
  CheckedVm vm;
  constexpr uint64_t kCmd = MVMM_VCPUOP_REGISTER_RUNSTATE_AREA;
  ASSERT_EQ(Register(vm, kRunstate, 0, kCmd), 0);
  const HypercallResult again = vm.Result(MVMM_HC_vcpu_op, kCmd, 0, kRunstate + 8);
  EXPECT_EQ(again.value, -MVMM_EINVAL);
  EXPECT_STREQ(again.refusal, "runstate area already registered");
  EXPECT_EQ(vm.control.runstate_gpa, std::optional<uint64_t>(kRunstate));
}

TEST(ForceEvtchnCallbackTest, WithoutVcpuInfoIsEinvalAndNoCauseOp) {
  CheckedVm vm;
  const HypercallResult result = vm.Result(MVMM_HC_force_evtchn_callback);
  EXPECT_EQ(testing::AbiRow(result.value, "force_evtchn_callback.EINVAL"), -MVMM_EINVAL);
  EXPECT_STREQ(result.refusal, "no vcpu_info registered");
  // The exit was paid, the operation was not carried out.
  EXPECT_EQ(vm.cause(Cause::kIfSet).exits, 1u);
  EXPECT_EQ(vm.cause(Cause::kIfSet).ops, 0u);
  EXPECT_EQ(vm.stats.hc_errors[MVMM_HC_force_evtchn_callback], 1u);
}

TEST(ForceEvtchnCallbackTest, IsOneIfSetExitAndTouchesNothing) {
  CheckedVm vm;
  ASSERT_EQ(Register(vm, kInfo), 0);
  vm.ram[kPendingAt] = 1;
  vm.ram[kMaskAt] = 0;
  const uint64_t rflags = vm.vcpu.Get(Reg::kRflags);
  // Arguments are ignored, whatever they are.
  EXPECT_EQ(
      testing::AbiRow(vm.Call(MVMM_HC_force_evtchn_callback, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull),
                      "force_evtchn_callback.ok"),
      0);
  EXPECT_EQ(vm.Call(MVMM_HC_force_evtchn_callback), 0);
  EXPECT_EQ(vm.cause(Cause::kIfSet).exits, 2u);
  EXPECT_EQ(vm.cause(Cause::kIfSet).ops, 2u);
  EXPECT_EQ(vm.cause(Cause::kIfClear).ops, 0u);
  EXPECT_EQ(vm.stats.hc_exits[MVMM_HC_force_evtchn_callback], 2u);
  EXPECT_EQ(Byte(vm, kPendingAt), 1);
  EXPECT_EQ(Byte(vm, kMaskAt), 0);
  EXPECT_EQ(vm.vcpu.Get(Reg::kRflags), rflags);
}

TEST(ForceEvtchnCallbackTest, AsMulticallEntryIsAnIfSetOpButNoExit) {
  CheckedVm vm;
  ASSERT_EQ(Register(vm, kInfo), 0);
  mvmm_multicall_entry entry{};
  entry.op = MVMM_HC_force_evtchn_callback;
  constexpr uint64_t kList = 0x8000;
  ASSERT_TRUE(vm.memory.WriteObj(GuestAddress(kList), entry));
  EXPECT_EQ(vm.Call(MVMM_HC_multicall, kList, 1), 0);
  EXPECT_EQ(vm.cause(Cause::kIfSet).ops, 1u);
  EXPECT_EQ(vm.cause(Cause::kIfSet).exits, 0u);
}

TEST(ForceEvtchnCallbackTest, FromCpl3IsEperm) {
  CheckedVm vm;
  ASSERT_EQ(Register(vm, kInfo), 0);
  vm.vcpu.cpl = 3;
  vm.SetHypercallRegs(MVMM_HC_force_evtchn_callback, {0, 0, 0, 0, 0});
  EXPECT_EQ(vm.dispatcher.HandleExit(vm.env), -MVMM_EPERM);
  EXPECT_EQ(vm.cause(Cause::kIfSet).exits, 0u);
  EXPECT_EQ(vm.stats.hc_ops[MVMM_HC_force_evtchn_callback], 0u);
}

}  // namespace
}  // namespace minivmm
