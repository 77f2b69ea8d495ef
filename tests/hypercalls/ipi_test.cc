// send_ipi and flush_tlb_others (docs/hypercalls.md): every errno, in check
// order, with nothing delivered or flagged on a refusal; who gets an IPI,
// which targets are flagged and which are deferred.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "tests/hypercalls/expect.h"

namespace minivmm {
namespace {

using testing::CheckedVm;
using testing::FakeCpus;
using Ipi = FakeCpus::Ipi;

constexpr uint64_t kRunstate = 0x5000;  // vCPU n's area at kRunstate + 8 n

uint32_t Flags(const CheckedVm& vm, uint32_t cpu) {
  return static_cast<uint32_t>(vm.Peek64(kRunstate + 8 * cpu) >> 32);
}

// A VM of `cpus` vCPUs, the caller vCPU `self`, every vCPU with a run-state
// area whose flags hold `junk` (cleared bits stay cleared, set ones set).
void MakeCpus(CheckedVm& vm, uint32_t cpus, uint32_t self, uint32_t junk = 0) {
  vm.cpus.cpus = cpus;
  vm.exit.vcpu_id = self;
  for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
    vm.cpus.runstate[cpu] = kRunstate + 8 * cpu;
    vm.Poke64(kRunstate + 8 * cpu, uint64_t{junk} << 32);
  }
}

TEST(SendIpiTest, EveryTargetGetsOneIpiAndTheResultCountsThem) {
  CheckedVm vm;
  MakeCpus(vm, 4, 1);
  vm.cpus.blocked[2] = true;
  EXPECT_EQ(testing::AbiRow(vm.Call(MVMM_HC_send_ipi, 0b1110, MVMM_IPI_VECTOR), "send_ipi.ok"), 3);
  EXPECT_EQ(vm.cpus.sent, (std::vector<Ipi>{{1, 1}, {1, 2}, {1, 3}}));  // own bit included
  EXPECT_EQ(vm.cause(Cause::kIpi).ops, 3u);
  EXPECT_EQ(vm.cause(Cause::kIpi).exits, 1u);
  EXPECT_EQ(vm.stats.hc_exits[MVMM_HC_send_ipi], 1u);
  // Nothing but the IPIs: no flag, no run-state change.
  for (uint32_t cpu = 0; cpu < 4; ++cpu) EXPECT_EQ(vm.Peek64(kRunstate + 8 * cpu), 0u);
}

TEST(SendIpiTest, WorksWithOneVcpuToItself) {
  CheckedVm vm;
  EXPECT_EQ(vm.Call(MVMM_HC_send_ipi, 1, MVMM_IPI_VECTOR), 1);
  EXPECT_EQ(vm.cpus.sent, (std::vector<Ipi>{{0, 0}}));
}

TEST(SendIpiTest, ThirtyTwoVcpus) {
  CheckedVm vm;
  MakeCpus(vm, MVMM_MAX_CPUS, 31);
  EXPECT_EQ(vm.Call(MVMM_HC_send_ipi, 0xFFFFFFFFull, MVMM_IPI_VECTOR), 32);
  EXPECT_EQ(vm.cpus.sent.size(), 32u);
  EXPECT_EQ(vm.Call(MVMM_HC_send_ipi, 1ull << 32, MVMM_IPI_VECTOR), -MVMM_EINVAL);
  EXPECT_EQ(vm.cpus.sent.size(), 32u);
}

TEST(SendIpiTest, RefusalsInCheckOrderDeliverNothing) {
  CheckedVm vm;
  MakeCpus(vm, 2, 0);
  struct Case {
    uint64_t mask, vector;
    const char* row;
  };
  const Case cases[] = {
      {0, MVMM_IPI_VECTOR, "send_ipi.EINVAL"},             // empty mask
      {0, MVMM_TIMER_VECTOR, "send_ipi.EINVAL"},           // empty mask (checked first)
      {0b100, MVMM_IPI_VECTOR, "send_ipi.EINVAL.2"},       // vCPU 2 of 2
      {0b111, MVMM_IPI_VECTOR, "send_ipi.EINVAL.2"},       // good bits and one bad: none delivered
      {1ull << 63, MVMM_IPI_VECTOR, "send_ipi.EINVAL.2"},  // the top bit
      {0b11, MVMM_TIMER_VECTOR, "send_ipi.EINVAL.3"},      // another vector
      {0b11, MVMM_IPI_VECTOR | (1ull << 32), "send_ipi.EINVAL.3"},  // high bits of the vector
      {0b11, 0, "send_ipi.EINVAL.3"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "mask " << c.mask << " vector " << c.vector);
    testing::AbiRow(vm.Call(MVMM_HC_send_ipi, c.mask, c.vector), c.row);
  }
  EXPECT_TRUE(vm.cpus.sent.empty());
  EXPECT_EQ(vm.cause(Cause::kIpi).ops, 0u);
  EXPECT_EQ(vm.cause(Cause::kIpi).exits, std::size(cases));
  EXPECT_EQ(vm.stats.hc_errors[MVMM_HC_send_ipi], std::size(cases));
}

TEST(SendIpiTest, NoDirectoryIsEnosys) {
  CheckedVm vm;
  vm.env.cpus = nullptr;
  EXPECT_EQ(testing::AbiRow(vm.Call(MVMM_HC_send_ipi, 1, MVMM_IPI_VECTOR), "send_ipi.ENOSYS"),
            -MVMM_ENOSYS);
  EXPECT_EQ(testing::AbiRow(vm.Call(MVMM_HC_flush_tlb_others, 2), "flush_tlb_others.ENOSYS"),
            -MVMM_ENOSYS);
  EXPECT_TRUE(vm.cpus.sent.empty());
}

TEST(SendIpiTest, FromAMulticallEntryCountsAnOpButNoExit) {
  CheckedVm vm;
  MakeCpus(vm, 2, 0);
  mvmm_multicall_entry entry{};
  entry.op = MVMM_HC_send_ipi;
  entry.args[0] = 0b10;
  entry.args[1] = MVMM_IPI_VECTOR;
  ASSERT_TRUE(vm.memory.WriteObj(GuestAddress(0x6000), entry));
  EXPECT_EQ(vm.Call(MVMM_HC_multicall, 0x6000, 1), 0);
  EXPECT_EQ(vm.Peek64(0x6000 + offsetof(mvmm_multicall_entry, result)), 1u);
  EXPECT_EQ(vm.cpus.sent, (std::vector<Ipi>{{0, 1}}));
  EXPECT_EQ(vm.cause(Cause::kIpi).ops, 1u);
  EXPECT_EQ(vm.cause(Cause::kIpi).exits, 0u);
}

// docs/hypercalls.md: tlb_flushes_deferred and directed_yields count
// multicall entries as they count direct calls (ops, not exits).
TEST(FlushTlbOthersTest, MulticallEntriesCountDeferredFlushesAndDirectedYields) {
  CheckedVm vm;
  MakeCpus(vm, 4, 0);
  vm.cpus.blocked[1] = true;
  vm.cpus.blocked[3] = true;
  mvmm_multicall_entry entries[2] = {};
  entries[0].op = MVMM_HC_flush_tlb_others;
  entries[0].args[0] = 0b1110;
  entries[1].op = MVMM_HC_sched_op;
  entries[1].args[0] = MVMM_SCHEDOP_YIELD_TO;
  entries[1].args[1] = 2;
  ASSERT_TRUE(vm.memory.WriteObj(GuestAddress(0x6000), entries));
  EXPECT_EQ(vm.Call(MVMM_HC_multicall, 0x6000, 2), 0);
  EXPECT_EQ(vm.Peek64(0x6000 + offsetof(mvmm_multicall_entry, result)), 1u);  // vCPU 2 ran
  EXPECT_EQ(vm.Peek64(0x6040 + offsetof(mvmm_multicall_entry, result)), 0u);
  EXPECT_EQ(vm.stats.tlb_flushes_deferred, 2u);
  EXPECT_EQ(vm.stats.directed_yields, 1u);
  EXPECT_EQ(vm.cause(Cause::kTlbFlush).ops, 3u);
  EXPECT_EQ(vm.cause(Cause::kTlbFlush).exits, 0u);
  EXPECT_EQ(vm.cause(Cause::kYield).ops, 1u);
  EXPECT_EQ(vm.cause(Cause::kYield).exits, 0u);
  EXPECT_EQ(vm.control.request, VcpuRequest::kYield);
}

TEST(FlushTlbOthersTest, FlagsEveryTargetKicksOnlyTheRunningOnes) {
  CheckedVm vm;
  MakeCpus(vm, 4, 0, /*junk=*/0x80);
  vm.cpus.blocked[1] = true;
  vm.cpus.blocked[3] = true;
  EXPECT_EQ(testing::AbiRow(vm.Call(MVMM_HC_flush_tlb_others, 0b1110), "flush_tlb_others.ok"),
            1);  // vCPU 2 ran
  EXPECT_EQ(vm.cpus.sent, (std::vector<Ipi>{{0, 2}}));
  EXPECT_EQ(Flags(vm, 0), 0x80u);  // the caller: untouched
  for (uint32_t cpu = 1; cpu < 4; ++cpu) {
    EXPECT_EQ(Flags(vm, cpu), 0x80u | MVMM_RUNSTATE_FLUSH_TLB) << cpu;            // ORed in
    EXPECT_EQ(static_cast<uint32_t>(vm.Peek64(kRunstate + 8 * cpu)), 0u) << cpu;  // state kept
  }
  EXPECT_EQ(vm.cause(Cause::kTlbFlush).ops, 3u);
  EXPECT_EQ(vm.cause(Cause::kTlbFlush).exits, 1u);
  EXPECT_EQ(vm.stats.tlb_flushes_deferred, 2u);
}

TEST(FlushTlbOthersTest, AllBlockedIsAllDeferredAndAnAlreadySetFlagStaysSet) {
  CheckedVm vm;
  MakeCpus(vm, 3, 2, /*junk=*/MVMM_RUNSTATE_FLUSH_TLB);
  vm.cpus.blocked[0] = vm.cpus.blocked[1] = true;
  EXPECT_EQ(vm.Call(MVMM_HC_flush_tlb_others, 0b011), 0);
  EXPECT_TRUE(vm.cpus.sent.empty());
  EXPECT_EQ(Flags(vm, 0), MVMM_RUNSTATE_FLUSH_TLB);
  EXPECT_EQ(Flags(vm, 1), MVMM_RUNSTATE_FLUSH_TLB);
  EXPECT_EQ(vm.stats.tlb_flushes_deferred, 2u);
}

TEST(FlushTlbOthersTest, RefusalsInCheckOrderChangeNothing) {
  CheckedVm vm;
  MakeCpus(vm, 3, 1);
  vm.cpus.runstate[2].reset();  // vCPU 2 registered none
  struct Case {
    uint64_t mask;
    const char* what;
    const char* row;
  };
  const Case cases[] = {
      {0, "empty mask", "flush_tlb_others.EINVAL"},
      {0b1000, "vCPU 3 of 3", "flush_tlb_others.EINVAL.2"},
      {0b1001, "a good target and vCPU 3 of 3", "flush_tlb_others.EINVAL.2"},
      {0b010, "the caller's own bit", "flush_tlb_others.EINVAL.3"},
      {0b011, "the caller's own bit beside a good target", "flush_tlb_others.EINVAL.3"},
      {0b100, "a target without a run-state area", "flush_tlb_others.EINVAL.4"},
      {0b101, "a good target first, then one without a run-state area",
       "flush_tlb_others.EINVAL.4"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    testing::AbiRow(vm.Result(MVMM_HC_flush_tlb_others, c.mask).value, c.row);
  }
  EXPECT_TRUE(vm.cpus.sent.empty());
  for (uint32_t cpu = 0; cpu < 3; ++cpu) EXPECT_EQ(vm.Peek64(kRunstate + 8 * cpu), 0u) << cpu;
  EXPECT_EQ(vm.cause(Cause::kTlbFlush).ops, 0u);
  EXPECT_EQ(vm.cause(Cause::kTlbFlush).exits, std::size(cases));
  EXPECT_EQ(vm.stats.tlb_flushes_deferred, 0u);
}

TEST(FlushTlbOthersTest, AMisalignedOrOutOfRamAreaIsRefusedLikeAMissingOne) {
  // The VMM's own directory only holds areas vcpu_op accepted; the handler
  // checks again rather than trusting it.
  for (uint64_t area : {kRunstate + 4, uint64_t{testing::kRamSize} - 4, ~uint64_t{0} - 3}) {
    CheckedVm vm;
    MakeCpus(vm, 2, 0);
    vm.cpus.runstate[1] = area;
    EXPECT_EQ(vm.Call(MVMM_HC_flush_tlb_others, 0b10), -MVMM_EINVAL) << area;
    EXPECT_TRUE(vm.cpus.sent.empty());
  }
}

TEST(FlushTlbOthersTest, OneVcpuHasNoOtherToFlush) {
  CheckedVm vm;
  MakeCpus(vm, 1, 0);
  EXPECT_EQ(vm.Call(MVMM_HC_flush_tlb_others, 1), -MVMM_EINVAL);
  EXPECT_EQ(vm.Call(MVMM_HC_flush_tlb_others, 2), -MVMM_EINVAL);
  EXPECT_EQ(vm.Peek64(kRunstate), 0u);
}

}  // namespace
}  // namespace minivmm
