// lock_wait, lock_kick and sched_op(yield_to) (docs/hypercalls.md): every
// errno in check order with nothing changed on a refusal (no kick sent, no
// request left, no memory written), what each accepted call asks of the run
// loop, and how the causes count them. The sleep itself is the run loop's
// (tests/vmm/run_loop_test.cc).
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "tests/hypercalls/expect.h"

namespace minivmm {
// A namespace of the file's own: the test binaries are unity builds.
namespace lock_test {
namespace {

using testing::CheckedVm;
using Kick = testing::FakeCpus::Ipi;

constexpr uint64_t kWord = 0x5000;

void MakeCpus(CheckedVm& vm, uint32_t cpus, uint32_t self) {
  vm.cpus.cpus = cpus;
  vm.exit.vcpu_id = self;
}

TEST(LockWaitTest, AChangedWordReturnsAtOnceAndAsksNothing) {
  CheckedVm vm;
  MakeCpus(vm, 2, 1);
  vm.Poke64(kWord, 0xAAAA'AAAA'0000'0001ull);  // only the low u32 is the word
  EXPECT_EQ(testing::AbiRow(vm.Call(MVMM_HC_lock_wait, kWord, 2), "lock_wait.ok"),
            MVMM_LOCK_WAIT_CHANGED);
  EXPECT_EQ(vm.control.request, VcpuRequest::kNone);
  EXPECT_EQ(vm.cause(Cause::kLockWait).ops, 1u);
  EXPECT_EQ(vm.cause(Cause::kLockWait).exits, 1u);
  EXPECT_EQ(vm.Peek64(kWord), 0xAAAA'AAAA'0000'0001ull);
}

TEST(LockWaitTest, AnUnchangedWordLeavesTheWaitToTheRunLoop) {
  CheckedVm vm;
  MakeCpus(vm, 2, 1);
  vm.Poke64(kWord, 0xFFFF'FFFFull);
  EXPECT_EQ(vm.Call(MVMM_HC_lock_wait, kWord, 0xFFFF'FFFFull), MVMM_LOCK_WAIT_KICKED);
  EXPECT_EQ(vm.control.request, VcpuRequest::kLockWait);
  EXPECT_EQ(vm.cause(Cause::kLockWait).ops, 1u);
  EXPECT_TRUE(vm.cpus.kicks.empty());
}

TEST(LockWaitTest, APendingShutdownIsNotDowngraded) {
  CheckedVm vm;
  MakeCpus(vm, 2, 0);
  vm.control.Shutdown(3);
  EXPECT_EQ(vm.Call(MVMM_HC_lock_wait, kWord, 0), MVMM_LOCK_WAIT_KICKED);
  EXPECT_EQ(vm.control.request, VcpuRequest::kShutdown);
  EXPECT_EQ(vm.control.exit_code, 3);
}

TEST(LockWaitTest, RefusalsInCheckOrderChangeNothing) {
  CheckedVm vm;
  MakeCpus(vm, 2, 0);
  struct Case {
    uint64_t gpa, expected;
    const char* row;
    const char* what;
  };
  const Case cases[] = {
      {kWord + 2, 0, "lock_wait.EINVAL", "misaligned"},
      {kWord + 1, 1ull << 32, "lock_wait.EINVAL", "misaligned (checked before expected)"},
      {testing::kRamSize + 2, 0, "lock_wait.EINVAL", "misaligned and outside RAM: alignment first"},
      {kWord, 1ull << 32, "lock_wait.EINVAL.2", "expected above a u32"},
      {testing::kRamSize, 0, "lock_wait.EFAULT", "just past RAM"},
      {~uint64_t{0} - 3, 0, "lock_wait.EFAULT", "the top of the address space"},
      {testing::kRamSize - 4, 1ull << 33, "lock_wait.EINVAL.2", "in RAM, expected too big"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    testing::AbiRow(vm.Call(MVMM_HC_lock_wait, c.gpa, c.expected), c.row);
    EXPECT_EQ(vm.control.request, VcpuRequest::kNone);
  }
  EXPECT_EQ(vm.Call(MVMM_HC_lock_wait, testing::kRamSize - 4, 0),
            MVMM_LOCK_WAIT_KICKED);  // last u32
  EXPECT_EQ(vm.cause(Cause::kLockWait).ops, 1u);
  EXPECT_EQ(vm.cause(Cause::kLockWait).exits, std::size(cases) + 1);
  EXPECT_EQ(vm.stats.hc_errors[MVMM_HC_lock_wait], std::size(cases));
}

TEST(LockWaitTest, NoDirectoryIsEnosys) {
  CheckedVm vm;
  vm.env.cpus = nullptr;
  EXPECT_EQ(testing::AbiRow(vm.Call(MVMM_HC_lock_wait, kWord, 0), "lock_wait.ENOSYS"),
            -MVMM_ENOSYS);
  EXPECT_EQ(testing::AbiRow(vm.Call(MVMM_HC_lock_kick, 1), "lock_kick.ENOSYS"), -MVMM_ENOSYS);
  EXPECT_EQ(testing::AbiRow(vm.Call(MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD_TO, 1), "sched_op.ENOSYS"),
            -MVMM_ENOSYS);
  EXPECT_EQ(vm.control.request, VcpuRequest::kNone);
}

TEST(LockWaitTest, AsAMulticallEntryIsRefusedAndAsksNothing) {
  CheckedVm vm;
  MakeCpus(vm, 2, 0);
  mvmm_multicall_entry entries[2]{};
  entries[0].op = MVMM_HC_lock_wait;
  entries[0].args[0] = kWord;  // the word is 0: it would sleep
  entries[1].op = MVMM_HC_lock_kick;
  entries[1].args[0] = 1;
  ASSERT_TRUE(vm.memory.WriteObj(GuestAddress(0x6000), entries));
  EXPECT_EQ(vm.Call(MVMM_HC_multicall, 0x6000, 2), 0);
  testing::AbiRow(static_cast<int64_t>(vm.Peek64(0x6000 + offsetof(mvmm_multicall_entry, result))),
                  "lock_wait.EINVAL.3");
  EXPECT_EQ(vm.Peek64(0x6040 + offsetof(mvmm_multicall_entry, result)), 0u);
  EXPECT_EQ(vm.control.request, VcpuRequest::kNone);
  EXPECT_EQ(vm.cpus.kicks, (std::vector<Kick>{{0, 1}}));
  EXPECT_EQ(vm.stats.hc_ops[MVMM_HC_lock_wait], 1u);
  EXPECT_EQ(vm.stats.hc_errors[MVMM_HC_lock_wait], 1u);
  EXPECT_EQ(vm.stats.hc_exits[MVMM_HC_lock_wait], 0u);
  EXPECT_EQ(vm.cause(Cause::kLockWait).ops, 0u);
  EXPECT_EQ(vm.cause(Cause::kLockKick).ops, 1u);
  EXPECT_EQ(vm.cause(Cause::kLockKick).exits, 0u);
}

TEST(LockKickTest, KicksExactlyTheTarget) {
  CheckedVm vm;
  MakeCpus(vm, 4, 2);
  EXPECT_EQ(testing::AbiRow(vm.Call(MVMM_HC_lock_kick, 3), "lock_kick.ok"), 0);
  EXPECT_EQ(vm.Call(MVMM_HC_lock_kick, 0), 0);
  EXPECT_EQ(vm.cpus.kicks, (std::vector<Kick>{{2, 3}, {2, 0}}));
  EXPECT_EQ(vm.cause(Cause::kLockKick).ops, 2u);
  EXPECT_EQ(vm.cause(Cause::kLockKick).exits, 2u);
  EXPECT_EQ(vm.control.request, VcpuRequest::kNone);  // the kicker runs on
}

TEST(LockKickTest, RefusalsKickNobody) {
  CheckedVm vm;
  MakeCpus(vm, 3, 1);
  for (uint64_t cpu :
       {uint64_t{1}, uint64_t{3}, uint64_t{MVMM_MAX_CPUS}, uint64_t{1} << 32, ~uint64_t{0}}) {
    // vCPU 1 is the caller; the others are at or above the count.
    testing::AbiRow(vm.Call(MVMM_HC_lock_kick, cpu),
                    cpu == 1 ? "lock_kick.EINVAL.2" : "lock_kick.EINVAL");
  }
  EXPECT_TRUE(vm.cpus.kicks.empty());
  EXPECT_EQ(vm.cause(Cause::kLockKick).ops, 0u);
  EXPECT_EQ(vm.cause(Cause::kLockKick).exits, 5u);
}

TEST(LockKickTest, OneVcpuHasNobodyToKick) {
  CheckedVm vm;
  EXPECT_EQ(vm.Call(MVMM_HC_lock_kick, 0), -MVMM_EINVAL);
  EXPECT_TRUE(vm.cpus.kicks.empty());
}

TEST(YieldToTest, AskesForAYieldAndCountsItDirected) {
  CheckedVm vm;
  MakeCpus(vm, 4, 0);
  EXPECT_EQ(vm.Call(MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD_TO, 3), 0);
  EXPECT_EQ(vm.control.request, VcpuRequest::kYield);
  EXPECT_EQ(vm.stats.directed_yields, 1u);
  EXPECT_EQ(vm.cause(Cause::kYield).ops, 1u);
  EXPECT_EQ(vm.cause(Cause::kYield).exits, 1u);
  // A plain yield is the same cause, not directed.
  EXPECT_EQ(vm.Call(MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD), 0);
  EXPECT_EQ(vm.stats.directed_yields, 1u);
  EXPECT_EQ(vm.cause(Cause::kYield).ops, 2u);
  // block and shutdown are no yield.
  EXPECT_EQ(vm.Call(MVMM_HC_sched_op, MVMM_SCHEDOP_BLOCK), 0);
  EXPECT_EQ(vm.cause(Cause::kYield).exits, 2u);
}

TEST(YieldToTest, ABadCpuIsRefusedAndAsksNothing) {
  CheckedVm vm;
  MakeCpus(vm, 2, 1);
  for (uint64_t cpu : {uint64_t{1}, uint64_t{2}, uint64_t{1} << 32, ~uint64_t{0}})
    EXPECT_EQ(
        testing::AbiRow(vm.Call(MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD_TO, cpu), "sched_op.EINVAL.3"),
        -MVMM_EINVAL)
        << cpu;
  EXPECT_EQ(vm.control.request, VcpuRequest::kNone);
  EXPECT_EQ(vm.stats.directed_yields, 0u);
  EXPECT_EQ(vm.cause(Cause::kYield).ops, 0u);
  EXPECT_EQ(vm.cause(Cause::kYield).exits, 4u);
}

}  // namespace
}  // namespace lock_test
}  // namespace minivmm
