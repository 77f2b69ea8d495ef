#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "hypercalls/handlers/handlers.h"
#include "tests/common/descriptors.h"
#include "tests/hypercalls/expect.h"

namespace minivmm {
namespace {

using testing::CheckedVm;
using testing::kRamSize;
using testing::kUserTlsDesc;
using testing::TlsSlotGpa;

constexpr uint64_t kList = 0x10000;
constexpr uint64_t kText = 0x4000;

mvmm_multicall_entry Entry(uint64_t op, std::initializer_list<uint64_t> args,
                           uint64_t result = 0xC0FFEE) {
  mvmm_multicall_entry e{};
  e.op = op;
  e.result = result;
  size_t i = 0;
  for (uint64_t a : args) e.args[i++] = a;
  return e;
}

class MulticallTest : public ::testing::Test {
 protected:
  void Put(uint64_t gpa, const std::vector<mvmm_multicall_entry>& entries) {
    ASSERT_LE(gpa + entries.size() * 64, vm_.ram.size());
    // Safety: the range was asserted inside the fake RAM just above; entries are POD.
    std::memcpy(vm_.ram.data() + gpa, entries.data(), entries.size() * 64);
  }
  int64_t Run(const std::vector<mvmm_multicall_entry>& entries) {
    Put(kList, entries);
    return vm_.Call(MVMM_HC_multicall, kList, entries.size());
  }
  int64_t Result(size_t i, uint64_t list = kList) const {
    return static_cast<int64_t>(vm_.Peek64(list + 64 * i + 8));
  }
  CheckedVm vm_;
};

TEST_F(MulticallTest, RunsEntriesInOrder) {
  vm_.PokeBytes(kText, "abc");
  Put(kList,
      {Entry(MVMM_HC_console_io, {0, 1, kText}), Entry(MVMM_HC_console_io, {0, 1, kText + 1}),
       Entry(MVMM_HC_console_io, {0, 1, kText + 2})});
  const HypercallResult result = vm_.Result(MVMM_HC_multicall, kList, 3);
  EXPECT_EQ(testing::AbiRow(result.value, "multicall.ok"), 0);
  EXPECT_EQ(result.refusal, nullptr);
  EXPECT_EQ(vm_.console.out, "abc");
}

TEST_F(MulticallTest, EachEntrySeesTheStateLeftByThePreviousOne) {
  vm_.vcpu.Set(Reg::kRflags, 0x2);
  EXPECT_EQ(
      Run({Entry(MVMM_HC_set_if, {1}), Entry(MVMM_HC_set_if, {0}), Entry(MVMM_HC_set_if, {1})}), 0);
  EXPECT_EQ(Result(0), 0);  // previous IF
  EXPECT_EQ(Result(1), 1);
  EXPECT_EQ(Result(2), 0);
  EXPECT_EQ(vm_.vcpu.Get(Reg::kRflags), 0x2 | MVMM_RFLAGS_IF);
}

TEST_F(MulticallTest, FailingEntryDoesNotStopTheBatch) {
  vm_.PokeBytes(kText, "ok");
  EXPECT_EQ(Run({Entry(99, {}), Entry(MVMM_HC_console_io, {7, 1, kText}),
                 Entry(MVMM_HC_update_descriptor, {MVMM_GDT_GPA, kUserTlsDesc}),
                 Entry(MVMM_HC_console_io, {0, 2, kText})}),
            0);
  EXPECT_EQ(Result(0), -MVMM_ENOSYS);
  EXPECT_EQ(Result(1), -MVMM_EINVAL);
  EXPECT_EQ(Result(2), -MVMM_EPERM);
  EXPECT_EQ(Result(3), 2);
  EXPECT_EQ(vm_.console.out, "ok");
}

TEST_F(MulticallTest, WritesBackOnlyResultFields) {
  const std::vector<mvmm_multicall_entry> entries = {Entry(MVMM_HC_set_if, {1, 2, 3, 4, 5, 6}),
                                                     Entry(MVMM_HC_set_if, {7}, 0)};
  Put(kList, entries);
  std::vector<uint8_t> before(vm_.ram.begin(), vm_.ram.end());
  ASSERT_EQ(vm_.Call(MVMM_HC_multicall, kList, 2), 0);
  EXPECT_EQ(Result(0), 0);             // previous IF; args[1..5] ignored by set_if
  EXPECT_EQ(Result(1), -MVMM_EINVAL);  // set_if(7)
  for (size_t i = 0; i < entries.size(); ++i) {
    const uint64_t result_at = kList + 64 * i + 8;
    std::memset(before.data() + result_at, 0, 8);
    std::memset(vm_.ram.data() + result_at, 0, 8);
  }
  EXPECT_TRUE(std::ranges::equal(before, vm_.ram));
}

TEST_F(MulticallTest, NestedMulticallIsEinval) {
  Put(0x20000, {Entry(MVMM_HC_set_if, {1})});
  EXPECT_EQ(Run({Entry(MVMM_HC_multicall, {0x20000, 1}), Entry(MVMM_HC_set_if, {0})}), 0);
  EXPECT_EQ(Result(0), -MVMM_EINVAL);
  EXPECT_EQ(Result(1), 0);  // the nested list never ran: IF was still clear
  EXPECT_EQ(Result(0, 0x20000), 0xC0FFEE);
  EXPECT_EQ(vm_.stats.hc_exits[MVMM_HC_multicall], 1u);
  EXPECT_EQ(vm_.stats.hc_ops[MVMM_HC_multicall], 2u);
  EXPECT_EQ(vm_.stats.hc_errors[MVMM_HC_multicall], 1u);
}

TEST_F(MulticallTest, ZeroCountIsNoopEvenWithBadList) {
  EXPECT_EQ(vm_.Call(MVMM_HC_multicall, ~0ull, 0), 0);
  EXPECT_EQ(vm_.stats.multicall_entries_histogram[0], 1u);
}

TEST_F(MulticallTest, OverMaximumCountIsE2big) {
  const HypercallResult result =
      vm_.Result(MVMM_HC_multicall, kList, MVMM_MULTICALL_MAX_ENTRIES + 1);
  EXPECT_EQ(testing::AbiRow(result.value, "multicall.E2BIG"), -MVMM_E2BIG);
  EXPECT_STREQ(result.refusal, "count above MVMM_MULTICALL_MAX_ENTRIES");
}

TEST_F(MulticallTest, CountTimes64OverflowIsRefusedNotTreatedAsEmpty) {
  // 2^58 * 64 wraps to 0: the bound must catch it before any multiplication.
  EXPECT_EQ(vm_.Call(MVMM_HC_multicall, kList, 1ull << 58), -MVMM_E2BIG);
  EXPECT_EQ(vm_.Call(MVMM_HC_multicall, kList, (1ull << 58) + 1), -MVMM_E2BIG);
  EXPECT_EQ(vm_.stats.hc_ops[MVMM_HC_console_io], 0u);
}

TEST_F(MulticallTest, MaximumCountRunsEveryEntry) {
  std::vector<mvmm_multicall_entry> entries(MVMM_MULTICALL_MAX_ENTRIES,
                                            Entry(MVMM_HC_sched_op, {MVMM_SCHEDOP_YIELD}));
  EXPECT_EQ(Run(entries), 0);
  EXPECT_EQ(vm_.stats.hc_ops[MVMM_HC_sched_op], MVMM_MULTICALL_MAX_ENTRIES);
  EXPECT_EQ(Result(511), 0);
  EXPECT_EQ(vm_.stats.multicall_entries_histogram[10], 1u);
}

TEST_F(MulticallTest, ListCrossingEndOfRamIsEfaultAndRunsNothing) {
  vm_.PokeBytes(kText, "x");
  Put(kRamSize - 64, {Entry(MVMM_HC_console_io, {0, 1, kText})});
  const HypercallResult result = vm_.Result(MVMM_HC_multicall, kRamSize - 64, 2);
  EXPECT_EQ(testing::AbiRow(result.value, "multicall.EFAULT"), -MVMM_EFAULT);
  EXPECT_STREQ(result.refusal, "entry list outside RAM");
  EXPECT_EQ(vm_.Call(MVMM_HC_multicall, kRamSize - 32, 1), -MVMM_EFAULT);
  EXPECT_EQ(vm_.console.out, "");
  EXPECT_EQ(Result(0, kRamSize - 64), 0xC0FFEE);
}

TEST_F(MulticallTest, ListEndingAtEndOfRamIsAccepted) {
  Put(kRamSize - 64, {Entry(MVMM_HC_set_if, {0})});
  EXPECT_EQ(vm_.Call(MVMM_HC_multicall, kRamSize - 64, 1), 0);
  EXPECT_EQ(Result(0, kRamSize - 64), 0);
}

TEST_F(MulticallTest, ListAddressPlusLengthWrappingIsEfault) {
  EXPECT_EQ(vm_.Call(MVMM_HC_multicall, ~0ull - 63, 1), -MVMM_EFAULT);
  EXPECT_EQ(vm_.Call(MVMM_HC_multicall, ~0ull - 63, 512), -MVMM_EFAULT);
}

TEST_F(MulticallTest, ListInTheGdtIsEfault) {
  EXPECT_EQ(vm_.Call(MVMM_HC_multicall, MVMM_GDT_GPA, 1), -MVMM_EFAULT);
}

TEST_F(MulticallTest, ListOverlappingItselfRunsTheOriginalCopy) {
  // Entry 0 rewrites entry 1's op (in guest memory) from console_io to
  // set_if through mmu_update; entry 1 must still run as console_io.
  vm_.PokeBytes(kText, "X");
  vm_.Poke64(0x7000, kList + 64);      // ptr: entry 1's op field
  vm_.Poke64(0x7008, MVMM_HC_set_if);  // val 40: even, so a not-present PTE value
  EXPECT_EQ(Run({Entry(MVMM_HC_mmu_update, {0x7000, 1}), Entry(MVMM_HC_console_io, {0, 1, kText})}),
            0);
  EXPECT_EQ(Result(0), 1);
  EXPECT_EQ(vm_.Peek64(kList + 64), uint64_t{MVMM_HC_set_if});  // memory was changed
  EXPECT_EQ(vm_.console.out, "X");                              // but the copy ran
  EXPECT_EQ(Result(1), 1);
  EXPECT_EQ(vm_.stats.hc_ops[MVMM_HC_set_if], 0u);
}

TEST_F(MulticallTest, EntryResultWriteBackDoesNotFeedLaterEntries) {
  // Entry 0's result field is entry 0's own; entry 1 reads console bytes from
  // entry 0's result field: it sees the result written back (memory is live),
  // but its own arguments come from the copy.
  EXPECT_EQ(Run({Entry(MVMM_HC_set_if, {1}), Entry(MVMM_HC_console_io, {0, 1, kList + 8})}), 0);
  EXPECT_EQ(vm_.console.out, std::string(1, '\0'));
}

TEST_F(MulticallTest, ShutdownInsideBatchIsNotDowngradedByLaterYield) {
  EXPECT_EQ(Run({Entry(MVMM_HC_sched_op, {MVMM_SCHEDOP_SHUTDOWN, 3}),
                 Entry(MVMM_HC_sched_op, {MVMM_SCHEDOP_YIELD})}),
            0);
  EXPECT_EQ(vm_.control.request, VcpuRequest::kShutdown);
  EXPECT_EQ(vm_.control.exit_code, 3);
}

// docs/hypercalls.md: entries after a shutdown entry still run, each with
// its own result; the shutdown takes effect after the batch, with the first
// accepted code (a later accepted shutdown changes nothing).
TEST_F(MulticallTest, EntriesAfterAShutdownEntryStillRun) {
  vm_.vcpu.Set(Reg::kRflags, 0x2);
  vm_.PokeBytes(kText, "x");
  EXPECT_EQ(Run({Entry(MVMM_HC_sched_op, {MVMM_SCHEDOP_SHUTDOWN, 3}),
                 Entry(MVMM_HC_console_io, {0, 1, kText}), Entry(MVMM_HC_set_if, {1}),
                 Entry(MVMM_HC_sched_op, {MVMM_SCHEDOP_SHUTDOWN, 256}),
                 Entry(MVMM_HC_sched_op, {MVMM_SCHEDOP_SHUTDOWN, 5})}),
            0);
  EXPECT_EQ(Result(0), 0);
  EXPECT_EQ(Result(1), 1);
  EXPECT_EQ(Result(2), 0);             // IF was clear
  EXPECT_EQ(Result(3), -MVMM_EINVAL);  // checked as ever
  EXPECT_EQ(Result(4), 0);             // accepted, but the first code stands
  EXPECT_EQ(vm_.console.out, "x");
  EXPECT_EQ(vm_.vcpu.Get(Reg::kRflags), 0x2 | MVMM_RFLAGS_IF);
  EXPECT_EQ(vm_.control.request, VcpuRequest::kShutdown);
  EXPECT_EQ(vm_.control.exit_code, 3);
}

// docs/hypercalls.md: an entry's op is all 64 bits (a direct call's number
// is EAX): bits above 31 make it no hypercall, -ENOSYS, hc_bad_number.
TEST_F(MulticallTest, AnEntryOpWithHighBitsIsEnosys) {
  vm_.vcpu.Set(Reg::kRflags, 0x2);
  EXPECT_EQ(Run({Entry((uint64_t{1} << 32) | MVMM_HC_set_if, {1}),
                 Entry((uint64_t{1} << 63) | MVMM_HC_set_if, {1})}),
            0);
  EXPECT_EQ(Result(0), -MVMM_ENOSYS);
  EXPECT_EQ(Result(1), -MVMM_ENOSYS);
  EXPECT_EQ(vm_.vcpu.Get(Reg::kRflags), 0x2u);
  EXPECT_EQ(vm_.stats.hc_bad_number, 2u);
  EXPECT_EQ(vm_.stats.hc_ops[MVMM_HC_set_if], 0u);
  EXPECT_EQ(vm_.cause(Cause::kMulticall).ops, 2u);
}

TEST_F(MulticallTest, EntriesCountAsOpsAndTheMulticallAsTheOneExit) {
  vm_.vcpu.cr0 = 0x80050023;
  EXPECT_EQ(Run({Entry(MVMM_HC_fpu_taskswitch, {1}), Entry(MVMM_HC_set_if, {1}),
                 Entry(MVMM_HC_update_descriptor, {TlsSlotGpa(0), kUserTlsDesc})}),
            0);
  const ExitStats& s = vm_.stats;
  EXPECT_EQ(s.hc_exits[MVMM_HC_multicall], 1u);
  EXPECT_EQ(s.hc_ops[MVMM_HC_multicall], 1u);
  for (int nr : {MVMM_HC_fpu_taskswitch, MVMM_HC_set_if, MVMM_HC_update_descriptor}) {
    EXPECT_EQ(s.hc_exits[nr], 0u) << nr;
    EXPECT_EQ(s.hc_ops[nr], 1u) << nr;
  }
  EXPECT_EQ(vm_.cause(Cause::kMulticall).ops, 3u);
  EXPECT_EQ(vm_.cause(Cause::kMulticall).exits, 1u);
  EXPECT_EQ(vm_.cause(Cause::kCr0Write).ops, 1u);
  EXPECT_EQ(vm_.cause(Cause::kCr0Write).exits, 0u);
  EXPECT_EQ(vm_.cause(Cause::kIfSet).ops, 1u);
  EXPECT_EQ(vm_.cause(Cause::kIfSet).exits, 0u);
  EXPECT_EQ(vm_.cause(Cause::kDescriptorUpdate).ops, 1u);
  EXPECT_EQ(vm_.cause(Cause::kDescriptorUpdate).exits, 0u);
  EXPECT_EQ(s.multicall_entries_histogram[2], 1u);  // 3 entries: bucket 2-3
}

TEST_F(MulticallTest, RefusedMulticallCountsExitButNoEntries) {
  EXPECT_EQ(vm_.Call(MVMM_HC_multicall, kRamSize, 1), -MVMM_EFAULT);
  EXPECT_EQ(vm_.cause(Cause::kMulticall).ops, 0u);
  EXPECT_EQ(vm_.cause(Cause::kMulticall).exits, 1u);
  EXPECT_EQ(vm_.stats.multicall_entries_histogram,
            decltype(vm_.stats.multicall_entries_histogram){});
}

TEST_F(MulticallTest, PassesArgsZeroToFourAndIgnoresArgFive) {
  HypercallArgs seen{};
  ASSERT_TRUE(vm_.dispatcher
                  .Register(MVMM_HC_USER_FIRST, "probe",
                            [&](HypercallEnv&, const HypercallArgs& a) -> absl::StatusOr<uint64_t> {
                              seen = a;
                              return 5;
                            })
                  .ok());
  EXPECT_EQ(Run({Entry(MVMM_HC_USER_FIRST, {11, 12, 13, 14, 15, 16})}), 0);
  EXPECT_EQ(seen, (HypercallArgs{11, 12, 13, 14, 15}));
  EXPECT_EQ(Result(0), 5);
}

TEST(MulticallHandlerTest, CallsRunnerOncePerEntryInOrder) {
  CheckedVm vm;
  std::vector<mvmm_multicall_entry> entries = {Entry(3, {1}), Entry(200, {2}), Entry(1, {3})};
  // Safety: 3 POD entries of 64 bytes at kList, far inside the 1 MiB fake RAM.
  std::memcpy(vm.ram.data() + kList, entries.data(), 3 * 64);
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  auto runner = [&](uint64_t nr, const HypercallArgs& a) -> int64_t {
    calls.emplace_back(nr, a[0]);
    return -static_cast<int64_t>(calls.size());
  };
  const HypercallResult r = hc::multicall(vm.env, {kList, 3}, runner);
  EXPECT_EQ(r.value, 0);
  EXPECT_EQ(r.refusal, nullptr);  // failing entries do not make the multicall a refusal
  EXPECT_EQ(calls, (std::vector<std::pair<uint64_t, uint64_t>>{{3, 1}, {200, 2}, {1, 3}}));
  EXPECT_EQ(static_cast<int64_t>(vm.Peek64(kList + 8)), -1);
  EXPECT_EQ(static_cast<int64_t>(vm.Peek64(kList + 64 + 8)), -2);
  EXPECT_EQ(static_cast<int64_t>(vm.Peek64(kList + 128 + 8)), -3);
}

}  // namespace
}  // namespace minivmm
