// The interrupt-readiness rule (vmm/core/interrupt_rule.h) on its own: the
// cases that must never inject, each named, then every input at once against
// the property the rule exists for. The run loop carrying the decisions out
// is tested with the scripted vCPU (run_loop_test.cc, "ReadinessRule").
#include "vmm/core/interrupt_rule.h"

#include "gtest/gtest.h"

namespace minivmm {
namespace {

using Action = InterruptDecision::Action;

// KVM's word at an exit where the guest had IF=1 and could take an interrupt.
constexpr VcpuInterruptState kReadyAtExit{.regs_dirty = false,
                                          .synced_if = true,
                                          .kvm_ready = true,
                                          .kvm_if_flag = true,
                                          .kvm_flags_current = true};

InterruptInputs Timer(VcpuInterruptState vcpu) {
  return {.vcpu = vcpu, .ipi_pending = false, .timer_pending = true};
}

TEST(ReadyForInterruptTest, ReadyAtTheExitInjectsTheTimer) {
  EXPECT_EQ(DecideInterrupt(Timer(kReadyAtExit)),
            (InterruptDecision{Action::kInject, MVMM_TIMER_VECTOR, false}));
}

TEST(ReadyForInterruptTest, NothingPendingDecidesNothing) {
  EXPECT_EQ(DecideInterrupt({.vcpu = kReadyAtExit}).action, Action::kNothing);
}

// set_if(0) cleared IF in the synced registers (dirty): KVM's if_flag and
// ready flag still say 1, as at the exit, and must not be believed.
TEST(ReadyForInterruptTest, SetIfZeroInTheSyncedRegistersNeverInjects) {
  VcpuInterruptState s = kReadyAtExit;
  s.regs_dirty = true;
  s.synced_if = false;
  EXPECT_EQ(DecideInterrupt(Timer(s)).action, Action::kRequestWindow);
  InterruptInputs both = Timer(s);
  both.ipi_pending = true;
  EXPECT_EQ(DecideInterrupt(both).action, Action::kRequestWindow);
}

// set_if(1): KVM said not ready at the exit (IF was 0), the synced IF is 1
// and an `out` leaves no interrupt shadow: inject at once, not one window
// exit later.
TEST(ReadyForInterruptTest, SetIfOneInTheSyncedRegistersInjectsAtOnce) {
  const VcpuInterruptState s{.regs_dirty = true,
                             .synced_if = true,
                             .kvm_ready = false,
                             .kvm_if_flag = false,
                             .kvm_flags_current = true};
  EXPECT_EQ(DecideInterrupt(Timer(s)).action, Action::kInject);
}

// KVM's flags not written at the last return of KVM_RUN (before the first
// entry, or a return that bypassed KVM's run path): whatever they and the
// synced registers say, only a window.
TEST(ReadyForInterruptTest, FlagsNotCurrentNeverInject) {
  VcpuInterruptState s = kReadyAtExit;
  s.kvm_flags_current = false;
  EXPECT_EQ(DecideInterrupt(Timer(s)).action, Action::kRequestWindow);
  s.regs_dirty = true;
  EXPECT_EQ(DecideInterrupt(Timer(s)).action, Action::kRequestWindow);
}

// if_flag alone is not readiness: an interrupt shadow (sti; mov ss) or an
// event KVM still has to deliver clears the ready flag with IF=1; and a
// ready flag with if_flag clear is not taken either.
TEST(ReadyForInterruptTest, AStaleIfFlagNeverInjects) {
  VcpuInterruptState s = kReadyAtExit;
  s.kvm_ready = false;
  EXPECT_EQ(DecideInterrupt(Timer(s)).action, Action::kRequestWindow);
  s = kReadyAtExit;
  s.kvm_if_flag = false;
  EXPECT_EQ(DecideInterrupt(Timer(s)).action, Action::kRequestWindow);
}

TEST(ReadyForInterruptTest, TheIpiGoesFirstAndTheTimerWaitsForTheWindow) {
  InterruptInputs in = Timer(kReadyAtExit);
  in.ipi_pending = true;
  EXPECT_EQ(DecideInterrupt(in), (InterruptDecision{Action::kInject, MVMM_IPI_VECTOR, true}));
  in.timer_pending = false;
  EXPECT_EQ(DecideInterrupt(in), (InterruptDecision{Action::kInject, MVMM_IPI_VECTOR, false}));
}

// The shared-memory mask holds the interrupt back without a window, however
// ready the vCPU is; a clear mask leaves IF to decide.
TEST(ReadyForInterruptTest, TheUpcallMaskHoldsBackWithoutAWindow) {
  InterruptInputs in = Timer(kReadyAtExit);
  in.mask = UpcallMask::kSet;
  EXPECT_EQ(DecideInterrupt(in).action, Action::kHoldBack);
  in.mask = UpcallMask::kClear;
  EXPECT_EQ(DecideInterrupt(in).action, Action::kInject);
  in.vcpu.kvm_if_flag = false;
  EXPECT_EQ(DecideInterrupt(in).action, Action::kRequestWindow);
}

// Every input: an injection only with KVM's flags current, never into IF=0
// as the guest will resume (the synced IF when a handler wrote the
// registers, else KVM's ready flag and if_flag both), never behind a set
// mask; and otherwise injected at once (no window exit for nothing), an
// interrupt pending never simply dropped.
TEST(ReadyForInterruptTest, EveryInputInjectsOnlyWhenTheGuestCanTakeIt) {
  for (int bits = 0; bits < (1 << 7); ++bits) {
    for (UpcallMask mask : {UpcallMask::kNotRegistered, UpcallMask::kClear, UpcallMask::kSet}) {
      const InterruptInputs in{.vcpu = {.regs_dirty = (bits & 1) != 0,
                                        .synced_if = (bits & 2) != 0,
                                        .kvm_ready = (bits & 4) != 0,
                                        .kvm_if_flag = (bits & 8) != 0,
                                        .kvm_flags_current = (bits & 16) != 0},
                               .ipi_pending = (bits & 32) != 0,
                               .timer_pending = (bits & 64) != 0,
                               .mask = mask};
      const InterruptDecision d = DecideInterrupt(in);
      SCOPED_TRACE(::testing::Message() << "bits " << bits << " mask " << static_cast<int>(mask));
      const bool pending = in.ipi_pending || in.timer_pending;
      const VcpuInterruptState& v = in.vcpu;
      const bool can_take = v.kvm_flags_current &&
                            (v.regs_dirty ? v.synced_if : v.kvm_ready && v.kvm_if_flag) &&
                            mask != UpcallMask::kSet;
      EXPECT_EQ(d.action == Action::kNothing, !pending);
      EXPECT_EQ(d.action == Action::kInject, pending && can_take);
      EXPECT_EQ(d.action == Action::kHoldBack, pending && mask == UpcallMask::kSet);
      if (d.action != Action::kInject) continue;
      EXPECT_EQ(d.vector, in.ipi_pending ? MVMM_IPI_VECTOR : MVMM_TIMER_VECTOR);
      EXPECT_EQ(d.window_after, in.ipi_pending && in.timer_pending);
    }
  }
}

}  // namespace
}  // namespace minivmm
