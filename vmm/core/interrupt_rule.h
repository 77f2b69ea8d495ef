// The VMM's interrupt-readiness rule: before an entry with an interrupt
// pending, inject which vector now, ask for an interrupt-window exit, or hold
// the interrupt back. One pure function of plain inputs, so that every case
// that must never inject is a unit test (tests/vmm/interrupt_rule_test.cc)
// and the run loop (RunLoop::HonourSignals) only carries the decision out.
// No <linux/kvm.h> here: the vCPU (Vcpu::InterruptState) supplies the raw
// inputs, KvmVcpu from kvm_run.
#ifndef MINIVMM_VMM_CORE_INTERRUPT_RULE_H_
#define MINIVMM_VMM_CORE_INTERRUPT_RULE_H_

#include <cstdint>

#include "minivmm_abi/boot.h"

namespace minivmm {

// What the vCPU says about itself, as the last KVM_RUN left it and the exit's
// handlers changed it since.
struct VcpuInterruptState {
  // A handler wrote the synced registers since the exit (kvm_dirty_regs has
  // KVM_SYNC_X86_REGS): the next entry applies them, so RFLAGS.IF there
  // (`synced_if`) is the IF the guest resumes with, whatever KVM said at the
  // exit (a set_if hypercall just changed it).
  bool regs_dirty = false;
  bool synced_if = false;
  // kvm_run.ready_for_interrupt_injection and kvm_run.if_flag: KVM's word
  // when KVM_RUN returned (IF=1, no interrupt shadow, nothing of its own
  // still to inject).
  bool kvm_ready = false;
  bool kvm_if_flag = false;
  // KVM wrote kvm_ready and kvm_if_flag at the last return of KVM_RUN, so
  // they describe the vCPU as it is now. KVM's run path rewrites both at
  // every return (post_kvm_run_save), a return before any entry included:
  // an immediate_exit or a signal pending at KVM_RUN (-EINTR). Not so
  // before the first KVM_RUN, or after a return that bypassed KVM's run
  // path; then nothing the vCPU says is trusted.
  bool kvm_flags_current = false;
};

// The shared-memory interrupt flag (minivmm_abi/boot.h mvmm_vcpu_info).
enum class UpcallMask : uint8_t {
  kNotRegistered,  // no vcpu_info: IF alone decides
  kClear,          // registered, evtchn_upcall_mask clear
  kSet,            // registered and masked: the interrupt waits behind it
};

struct InterruptInputs {
  VcpuInterruptState vcpu;
  bool ipi_pending = false;    // VmSignals::kIpi
  bool timer_pending = false;  // VmSignals::kInterrupt
  UpcallMask mask = UpcallMask::kNotRegistered;
};

struct InterruptDecision {
  enum class Action : uint8_t {
    kNothing,        // no interrupt pending
    kHoldBack,       // masked: set evtchn_upcall_pending, no window, no injection
    kRequestWindow,  // not injectable now: an exit as soon as the guest can take one
    kInject,         // inject `vector` before the next entry
  };
  Action action = Action::kNothing;
  uint32_t vector = 0;  // kInject: MVMM_IPI_VECTOR or MVMM_TIMER_VECTOR
  // kInject: another interrupt stays pending behind this one (a timer
  // behind an IPI): ask for a window, opened by the handler's iretq.
  bool window_after = false;

  bool operator==(const InterruptDecision&) const = default;
};

// Whether an external interrupt injected now would be taken at the next
// entry. Never on KVM's flags when they are not current; with the synced
// registers dirty, their IF (an `out` leaves no interrupt shadow, and KVM's
// flags describe the state before the handler changed it); else KVM's ready
// flag and if_flag both.
inline bool InjectableNow(const VcpuInterruptState& s) {
  if (!s.kvm_flags_current) return false;
  if (s.regs_dirty) return s.synced_if;
  return s.kvm_ready && s.kvm_if_flag;
}

// The rule. An IPI goes before the timer's (the higher vector first, as an
// APIC orders them); the other waits for the window after it.
inline InterruptDecision DecideInterrupt(const InterruptInputs& in) {
  using Action = InterruptDecision::Action;
  if (!in.ipi_pending && !in.timer_pending) return {};
  // While the guest's evtchn_upcall_mask is set the mask, not IF, is what is
  // closed: no window (it would open at once and exit for nothing); the
  // guest's unmask sees evtchn_upcall_pending and calls force_evtchn_callback.
  if (in.mask == UpcallMask::kSet) return {Action::kHoldBack};
  if (!InjectableNow(in.vcpu)) return {Action::kRequestWindow};
  return {Action::kInject, in.ipi_pending ? MVMM_IPI_VECTOR : MVMM_TIMER_VECTOR,
          in.ipi_pending && in.timer_pending};
}

}  // namespace minivmm

#endif  // MINIVMM_VMM_CORE_INTERRUPT_RULE_H_
