#include "vmm/run/vm_cpus.h"

namespace minivmm {

VmCpus::VmCpus(std::vector<VmSignals*> signals) : cpus_(signals.size()) {
  for (size_t i = 0; i < signals.size(); ++i) cpus_[i].signals = signals[i];
}

bool VmCpus::NothingCanWakeAny(const std::function<bool(uint32_t)>& timer_can_fire) const {
  for (size_t cpu = 0; cpu < cpus_.size(); ++cpu) {
    const Cpu& c = cpus_[cpu];
    switch (c.sleep) {
      case Sleep::kAwake:
        return false;
      case Sleep::kLockWait:
        if (c.signals == nullptr) return false;
        if (c.signals->lock_kicked.load(std::memory_order_acquire)) return false;
        [[fallthrough]];
      case Sleep::kBlocked:
        if (c.signals == nullptr) return false;
        // The timers before the pending bits: a timer stops being able to
        // fire only after it has raised its last interrupt (VmTimer::CanFire),
        // so "cannot fire" read first means that interrupt is visible below.
        if (timer_can_fire && timer_can_fire(static_cast<uint32_t>(cpu))) return false;
        if ((c.signals->Raised() & VmSignals::kAnyInterrupt) != 0) return false;
        break;
      case Sleep::kHalted:
        break;
    }
  }
  return true;
}

std::optional<uint64_t> VmCpus::RunstateGpa(uint32_t cpu) const {
  const RunControl* control = cpus_[cpu].control;
  return control != nullptr ? control->runstate_gpa : std::nullopt;
}

void VmCpus::SendIpi(uint32_t from, uint32_t cpu) {
  const Cpu& c = cpus_[cpu];
  if (c.signals == nullptr) return;
  // A sleeping target only needs waking: it is not in the guest, and a kick
  // would cost it an `intr` exit at its next entry. The sender itself sees
  // the bit before it re-enters the guest.
  c.signals->RaiseIpi(/*kick=*/cpu != from && c.sleep == Sleep::kAwake);
}

void VmCpus::LockKick(uint32_t /*from*/, uint32_t cpu) {
  if (VmSignals* s = cpus_[cpu].signals) s->RaiseLockKick();
}

}  // namespace minivmm
