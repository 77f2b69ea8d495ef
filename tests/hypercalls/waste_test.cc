// The wasted-exit analysis (vmm/core/waste.h) over the real handlers: each
// "exit" is one BeginExit / hypercall / EndExit, as the run loop does it.
#include "vmm/core/waste.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <optional>
#include <vector>

#include "hypercalls/dispatcher.h"
#include "tests/common/descriptors.h"
#include "tests/hypercalls/expect.h"

namespace minivmm {
// A namespace of the file's own: the test binaries are unity builds.
namespace waste_test {
namespace {

using testing::CheckedVm;
using testing::kUserTlsDesc;
using testing::TlsSlotGpa;

constexpr uint64_t kList = 0x10000;

class WasteTest : public ::testing::Test {
 protected:
  void SetUp() override { vm_.exit.waste = &log_; }

  // One exit: the hypercall, then the exit's verdict.
  std::optional<WasteReason> Exit(uint64_t nr, uint64_t a0 = 0, uint64_t a1 = 0,
                                  bool interrupt_pending = false) {
    log_.BeginExit(sequence_++, interrupt_pending);
    last_result_ = vm_.Call(nr, a0, a1);
    log_.EndExit();
    return log_.verdict();
  }
  std::optional<WasteReason> Multicall(const std::vector<mvmm_multicall_entry>& entries) {
    // Safety: the list fits in the fake RAM (asserted); entries are POD.
    EXPECT_LE(kList + entries.size() * sizeof(mvmm_multicall_entry), vm_.ram.size());
    std::memcpy(vm_.ram.data() + kList, entries.data(),
                entries.size() * sizeof(mvmm_multicall_entry));
    return Exit(MVMM_HC_multicall, kList, entries.size());
  }
  static mvmm_multicall_entry Entry(uint64_t op, uint64_t a0 = 0, uint64_t a1 = 0) {
    mvmm_multicall_entry e{};
    e.op = op;
    e.args[0] = a0;
    e.args[1] = a1;
    return e;
  }
  const CauseCount& ByCause(Cause c) const {
    return vm_.stats.wasted_by_cause[static_cast<int>(c)];
  }
  const CauseCount& SameValue(Cause c) const {
    return vm_.stats.wasted_same_value_by_cause[static_cast<int>(c)];
  }
  const CauseCount& ByReason(WasteReason r) const {
    return vm_.stats.wasted_by_reason[static_cast<int>(r)];
  }
  void SetIf(bool on) {
    const uint64_t f = vm_.vcpu.Get(Reg::kRflags);
    vm_.vcpu.Set(Reg::kRflags, on ? (f | MVMM_RFLAGS_IF) : (f & ~MVMM_RFLAGS_IF));
  }

  CheckedVm vm_;
  WasteLog log_{vm_.stats};
  uint64_t sequence_ = 0;
  int64_t last_result_ = 0;
};

TEST_F(WasteTest, AnalysisMarksTheStats) { EXPECT_TRUE(vm_.stats.waste_analysed); }

TEST_F(WasteTest, IfWriteThatKeepsIfIsSameValue) {
  SetIf(false);
  EXPECT_EQ(Exit(MVMM_HC_set_if, 0), WasteReason::kSameValue);
  EXPECT_EQ(ByCause(Cause::kIfClear).ops, 1u);
  EXPECT_EQ(ByCause(Cause::kIfClear).exits, 1u);
  EXPECT_EQ(vm_.stats.wasted_by_hypercall[MVMM_HC_set_if].exits, 1u);
  SetIf(true);
  EXPECT_EQ(Exit(MVMM_HC_set_if, 1), WasteReason::kSameValue);
  EXPECT_EQ(ByCause(Cause::kIfSet).exits, 1u);
  EXPECT_EQ(ByReason(WasteReason::kSameValue).exits, 2u);
  EXPECT_EQ(SameValue(Cause::kIfClear).ops, 1u);
  EXPECT_EQ(SameValue(Cause::kIfClear).exits, 1u);
  EXPECT_EQ(SameValue(Cause::kIfSet).exits, 1u);
}

TEST_F(WasteTest, IfEnableUndoneBeforeAnyInterruptIsACancelledPair) {
  SetIf(false);
  EXPECT_EQ(Exit(MVMM_HC_set_if, 1), std::nullopt);  // may still let an interrupt in
  EXPECT_EQ(Exit(MVMM_HC_set_if, 0), WasteReason::kCancelledPair);
  EXPECT_EQ(log_.cancels(), 0u);
  EXPECT_EQ(ByCause(Cause::kIfSet).exits, 1u);
  EXPECT_EQ(ByCause(Cause::kIfClear).exits, 1u);
  EXPECT_EQ(SameValue(Cause::kIfClear).exits + SameValue(Cause::kIfSet).exits, 0u);
  EXPECT_EQ(ByReason(WasteReason::kCancelledPair).ops, 2u);
  EXPECT_EQ(ByReason(WasteReason::kCancelledPair).exits, 2u);
}

TEST_F(WasteTest, IfEnableWithAnInterruptWaitingIsEffective) {
  SetIf(false);
  EXPECT_EQ(Exit(MVMM_HC_set_if, 1, 0, /*interrupt_pending=*/true), std::nullopt);
  EXPECT_EQ(Exit(MVMM_HC_set_if, 0), std::nullopt);
  EXPECT_EQ(ByReason(WasteReason::kCancelledPair).ops, 0u);
}

TEST_F(WasteTest, IfEnableThatLetAnInterruptInIsEffective) {
  SetIf(false);
  EXPECT_EQ(Exit(MVMM_HC_set_if, 1), std::nullopt);
  log_.InterruptInjected();
  EXPECT_EQ(Exit(MVMM_HC_set_if, 0), std::nullopt);
  EXPECT_EQ(ByCause(Cause::kIfSet).ops + ByCause(Cause::kIfClear).ops, 0u);
}

TEST_F(WasteTest, TsSetThenPlainClearIsACancelledPair) {
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 1), std::nullopt);
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 0), WasteReason::kCancelledPair);
  EXPECT_EQ(ByCause(Cause::kCr0Write).ops, 2u);
  EXPECT_EQ(ByCause(Cause::kCr0Write).exits, 2u);
  EXPECT_EQ(vm_.stats.wasted_by_hypercall[MVMM_HC_fpu_taskswitch].exits, 2u);
}

TEST_F(WasteTest, TsClearForTheNmHandlerMeansTheSetWasUsed) {
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 1), std::nullopt);
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 0, MVMM_TS_CLEAR_FOR_NM), std::nullopt);
  EXPECT_EQ(ByCause(Cause::kCr0Write).ops, 0u);
  // The VMM saw nothing (no fingerprint): kept on the guest's word.
  EXPECT_EQ(vm_.stats.ts_pairs_kept_by_guest, 1u);
  // A second clear keeps TS clear: the same value.
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 0), WasteReason::kSameValue);
  EXPECT_EQ(SameValue(Cause::kCr0Write).exits, 1u);
  // A tagged clear with no set before it keeps no pair.
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 0, MVMM_TS_CLEAR_FOR_NM), WasteReason::kSameValue);
  EXPECT_EQ(vm_.stats.ts_pairs_kept_by_guest, 1u);
}

TEST_F(WasteTest, TsReasonIsChecked) {
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 1, MVMM_TS_CLEAR_FOR_NM), std::nullopt);
  EXPECT_EQ(last_result_, -MVMM_EINVAL);
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 0, 2), std::nullopt);
  EXPECT_EQ(last_result_, -MVMM_EINVAL);
  EXPECT_EQ(vm_.vcpu.Cr0() & MVMM_CR0_TS, 0u);  // refused: nothing changed
}

// The VMM's own sight of FPU use: the FPU registers' fingerprint at the set
// and at a plain clear (VcpuState::FpuFingerprint).
TEST_F(WasteTest, PlainTsClearAfterTheFpuRegistersChangedIsNotWasted) {
  vm_.vcpu.fpu_fingerprint = 0x1111;
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 1), std::nullopt);
  vm_.vcpu.fpu_fingerprint = 0x2222;  // the FPU was used with TS set and no #NM
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 0), std::nullopt);
  EXPECT_EQ(log_.cancels(), std::nullopt);
  EXPECT_EQ(ByCause(Cause::kCr0Write).ops, 0u);
  // The set was used up: a clear now changes nothing, and the next pair is
  // judged on its own.
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 0), WasteReason::kSameValue);
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 1), std::nullopt);
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 0), WasteReason::kCancelledPair);
  EXPECT_EQ(ByReason(WasteReason::kCancelledPair).exits, 2u);
}

TEST_F(WasteTest, WriteCr0SeesTheFpuRegistersToo) {
  const uint64_t cr0 = vm_.vcpu.Cr0();
  vm_.vcpu.fpu_fingerprint = 1;
  EXPECT_EQ(Exit(MVMM_HC_write_cr0, cr0 | MVMM_CR0_TS), std::nullopt);
  vm_.vcpu.fpu_fingerprint = 2;
  EXPECT_EQ(Exit(MVMM_HC_write_cr0, cr0), std::nullopt);
  EXPECT_EQ(ByCause(Cause::kCr0Write).ops, 0u);
}

TEST_F(WasteTest, PlainTsClearWithTheFpuRegistersUnchangedIsACancelledPair) {
  vm_.vcpu.fpu_fingerprint = 0x1111;
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 1), std::nullopt);
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 0), WasteReason::kCancelledPair);
  EXPECT_EQ(log_.cancels(), 0u);
  EXPECT_EQ(ByCause(Cause::kCr0Write).exits, 2u);
}

TEST_F(WasteTest, WithoutAFingerprintAtEitherEndAPlainClearCancels) {
  // The backend cannot tell (a failed KVM_GET_FPU): as if the registers
  // had not changed.
  vm_.vcpu.fpu_fingerprint = std::nullopt;
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 1), std::nullopt);
  vm_.vcpu.fpu_fingerprint = 0x2222;
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 0), WasteReason::kCancelledPair);
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 1), std::nullopt);
  vm_.vcpu.fpu_fingerprint = std::nullopt;
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 0), WasteReason::kCancelledPair);
  EXPECT_EQ(ByCause(Cause::kCr0Write).exits, 4u);
}

TEST_F(WasteTest, TsClearForTheNmHandlerNeedsNoFingerprint) {
  vm_.vcpu.fpu_fingerprint = 0x1111;
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 1), std::nullopt);
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 0, MVMM_TS_CLEAR_FOR_NM), std::nullopt);
  EXPECT_EQ(ByCause(Cause::kCr0Write).ops, 0u);
  // The registers as the set left them: only the guest's tag kept the pair.
  EXPECT_EQ(vm_.stats.ts_pairs_kept_by_guest, 1u);
}

TEST_F(WasteTest, TsClearForTheNmHandlerAfterSeenFpuUseIsNotTheGuestsWordAlone) {
  vm_.vcpu.fpu_fingerprint = 0x1111;
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 1), std::nullopt);
  vm_.vcpu.fpu_fingerprint = 0x2222;  // the VMM sees the FPU used since the set
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 0, MVMM_TS_CLEAR_FOR_NM), std::nullopt);
  EXPECT_EQ(vm_.stats.ts_pairs_kept_by_guest, 0u);
}

TEST_F(WasteTest, WriteCr0TogglingTsPairsWithFpuTaskswitch) {
  const uint64_t cr0 = vm_.vcpu.Cr0();
  EXPECT_EQ(Exit(MVMM_HC_write_cr0, cr0 | MVMM_CR0_TS), std::nullopt);
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 0), WasteReason::kCancelledPair);
  EXPECT_EQ(vm_.stats.wasted_by_hypercall[MVMM_HC_write_cr0].exits, 1u);
  EXPECT_EQ(Exit(MVMM_HC_write_cr0, cr0), WasteReason::kSameValue);
}

TEST_F(WasteTest, DescriptorRewrittenUnchangedIsSameValue) {
  EXPECT_EQ(Exit(MVMM_HC_update_descriptor, TlsSlotGpa(0), kUserTlsDesc), std::nullopt);
  // The accessed bit the VMM forces does not make the same descriptor new.
  EXPECT_EQ(Exit(MVMM_HC_update_descriptor, TlsSlotGpa(0), kUserTlsDesc), WasteReason::kSameValue);
  EXPECT_EQ(ByCause(Cause::kDescriptorUpdate).exits, 1u);
  // Refused stores are errors, not waste.
  EXPECT_EQ(Exit(MVMM_HC_update_descriptor, TlsSlotGpa(0) + 1, kUserTlsDesc), std::nullopt);
  EXPECT_EQ(ByCause(Cause::kDescriptorUpdate).ops, 1u);
}

TEST_F(WasteTest, StackSwitchToTheCurrentStackIsSameValue) {
  EXPECT_EQ(Exit(MVMM_HC_stack_switch, MVMM_SEL_KERNEL_DS, 0x8000), std::nullopt);
  EXPECT_EQ(Exit(MVMM_HC_stack_switch, MVMM_SEL_KERNEL_DS, 0x8000), WasteReason::kSameValue);
  EXPECT_EQ(vm_.stats.wasted_by_hypercall[MVMM_HC_stack_switch].exits, 1u);
  EXPECT_EQ(Exit(MVMM_HC_stack_switch, MVMM_SEL_KERNEL_DS, 0x9000), std::nullopt);
}

TEST_F(WasteTest, MmuUpdateOfTheValueThereIsSameValue) {
  const mvmm_mmu_update reqs[2] = {{0x20000, 0x5003}, {0x20008, 0}};  // the second is 0 already
  // Safety: in the fake RAM; POD.
  std::memcpy(vm_.ram.data() + kList, reqs, sizeof(reqs));
  EXPECT_EQ(Exit(MVMM_HC_mmu_update, kList, 2), std::nullopt);  // one of two wasted
  EXPECT_EQ(ByCause(Cause::kPageTableUpdate).ops, 1u);
  EXPECT_EQ(Exit(MVMM_HC_mmu_update, kList, 2), WasteReason::kSameValue);
  EXPECT_EQ(ByCause(Cause::kPageTableUpdate).ops, 3u);
  EXPECT_EQ(ByCause(Cause::kPageTableUpdate).exits, 1u);
}

TEST_F(WasteTest, MulticallOfWastedEntriesIsWasted) {
  SetIf(false);
  // A TS set and clear in one batch cancel inside the exit; IF stays 0.
  EXPECT_EQ(Multicall({Entry(MVMM_HC_fpu_taskswitch, 1), Entry(MVMM_HC_fpu_taskswitch, 0),
                       Entry(MVMM_HC_set_if, 0)}),
            WasteReason::kAllEntriesWasted);
  EXPECT_EQ(ByCause(Cause::kMulticall).exits, 1u);
  EXPECT_EQ(ByCause(Cause::kCr0Write).ops, 2u);
  EXPECT_EQ(ByCause(Cause::kCr0Write).exits, 0u);  // entries share the multicall's exit
  EXPECT_EQ(ByReason(WasteReason::kAllEntriesWasted).exits, 1u);
}

TEST_F(WasteTest, MulticallWithOneUsefulEntryIsNot) {
  SetIf(false);
  EXPECT_EQ(Multicall({Entry(MVMM_HC_set_if, 0),
                       Entry(MVMM_HC_stack_switch, MVMM_SEL_KERNEL_DS, 0x7000)}),
            std::nullopt);
  EXPECT_EQ(ByCause(Cause::kIfClear).ops, 1u);
  EXPECT_EQ(ByCause(Cause::kMulticall).exits, 0u);
}

TEST_F(WasteTest, MulticallWithAFailedOrSilentEntryIsNot) {
  SetIf(false);
  EXPECT_EQ(Multicall({Entry(MVMM_HC_set_if, 0), Entry(MVMM_HC_set_if, 7)}), std::nullopt);
  EXPECT_EQ(Multicall({Entry(MVMM_HC_set_if, 0), Entry(MVMM_HC_console_io, 0, 0)}), std::nullopt);
  EXPECT_EQ(ByCause(Cause::kMulticall).exits, 0u);
}

TEST_F(WasteTest, PairCompletingInALaterExitCountsTheEarlierMulticall) {
  SetIf(false);
  // The batch's only operation is a TS set; the clear comes as its own exit.
  EXPECT_EQ(Multicall({Entry(MVMM_HC_fpu_taskswitch, 1)}), std::nullopt);
  EXPECT_EQ(Exit(MVMM_HC_fpu_taskswitch, 0), WasteReason::kCancelledPair);
  EXPECT_EQ(log_.cancels(), 0u);
  EXPECT_EQ(ByCause(Cause::kMulticall).exits, 1u);  // now all its entries are wasted
  EXPECT_EQ(ByCause(Cause::kCr0Write).exits, 1u);
}

// Every handler that notes its operations notes them under the cause its
// call is counted under (the cause list's row for its number and first
// argument: hc::NoteHypercallOp), never a cause of its own choosing: of two
// equal calls the second (at least) is same value, and every same-value exit
// is under exactly the counted cause.
TEST(WasteCauseTest, ASameValueOpIsWastedUnderTheCauseItsCallCountsUnder) {
  struct Case {
    const char* name;
    uint64_t nr;
    std::function<HypercallArgs(CheckedVm&)> args;  // after the VM's set-up
  };
  constexpr uint64_t kOps = 0x6000;
  const std::vector<Case> cases = {
      {"set_if(0)", MVMM_HC_set_if, [](CheckedVm&) { return HypercallArgs{0}; }},
      {"set_if(1)", MVMM_HC_set_if, [](CheckedVm&) { return HypercallArgs{1}; }},
      {"fpu_taskswitch(1)", MVMM_HC_fpu_taskswitch,
       [](CheckedVm&) {
         return HypercallArgs{1, MVMM_TS_CLEAR_PLAIN};
       }},
      {"write_cr0", MVMM_HC_write_cr0,
       [](CheckedVm& vm) { return HypercallArgs{vm.vcpu.Cr0() ^ MVMM_CR0_TS}; }},
      {"update_descriptor", MVMM_HC_update_descriptor,
       [](CheckedVm&) {
         return HypercallArgs{TlsSlotGpa(0), kUserTlsDesc};
       }},
      {"mmu_update", MVMM_HC_mmu_update,
       [](CheckedVm& vm) {
         vm.Poke64(kList, 0x20000);
         vm.Poke64(kList + 8, 0x5003);
         return HypercallArgs{kList, 1};
       }},
      {"mmuext_op", MVMM_HC_mmuext_op,
       [](CheckedVm& vm) {
         vm.Poke64(kOps, MVMM_MMUEXT_NEW_BASEPTR);
         vm.Poke64(kOps + 8, 0x20000 >> 12);
         vm.Poke64(kOps + 16, 0);
         return HypercallArgs{kOps, 1};
       }},
      {"stack_switch", MVMM_HC_stack_switch,
       [](CheckedVm&) {
         return HypercallArgs{MVMM_SEL_KERNEL_DS, 0x8000};
       }},
      {"set_segment_base", MVMM_HC_set_segment_base,
       [](CheckedVm&) {
         return HypercallArgs{MVMM_SEGBASE_FS, 0x7000};
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CheckedVm vm;
    WasteLog log(vm.stats);
    vm.exit.waste = &log;
    const HypercallArgs args = c.args(vm);
    uint64_t same_value_exits = 0;  // by the exits' verdicts: the second one at least
    for (uint64_t sequence : {0, 1}) {
      log.BeginExit(sequence, /*interrupt_pending=*/false);
      ASSERT_GE(vm.Call(c.nr, args[0], args[1]), 0);
      log.EndExit();
      if (log.verdict() == WasteReason::kSameValue) ++same_value_exits;
    }
    EXPECT_EQ(log.verdict(), WasteReason::kSameValue);
    const std::optional<CauseOps> counted = CauseOf(c.nr, args, 0);
    ASSERT_TRUE(counted.has_value());
    for (int i = 0; i < static_cast<int>(Cause::kCount); ++i) {
      EXPECT_EQ(vm.stats.wasted_same_value_by_cause[i].exits,
                i == static_cast<int>(counted->cause) ? same_value_exits : 0u)
          << CauseName(static_cast<Cause>(i));
    }
  }
}

TEST(WasteOffTest, NoAnalysisCountsNothing) {
  CheckedVm vm;
  EXPECT_EQ(vm.exit.waste, nullptr);
  vm.Call(MVMM_HC_set_if, 0);
  vm.Call(MVMM_HC_set_if, 0);
  EXPECT_FALSE(vm.stats.waste_analysed);
  for (const CauseCount& c : vm.stats.wasted_by_cause) EXPECT_EQ(c.ops + c.exits, 0u);
}

}  // namespace
}  // namespace waste_test
}  // namespace minivmm
