// Whether this host's KVM can run the PC machine at all, found out before the
// machine's own VM is built: a throwaway VM of 64 KiB with one vCPU entered in
// 32-bit protected mode (as a Multiboot image is) executes `ud2` with an IDT
// of its own; the #UD must reach its handler, whose `iret` must return past
// the ud2, where the probe writes a byte to a port. Every PC guest takes
// exceptions and interrupts in protected mode and returns from them
// (kvm-unit-tests from its first instruction on), so a KVM that cannot do
// both there cannot run the machine. kvm_pvm is such a KVM: it runs a guest
// outside its 64-bit PVM mode in KVM's instruction emulator, which delivers
// the #UD but cannot emulate a protected-mode `iret` (an internal error;
// seen on kvm_pvm, docs/hosts.md, docs/machines.md "cannot run").
#ifndef MINIVMM_VMM_MACHINE_PC_HOST_CHECK_H_
#define MINIVMM_VMM_MACHINE_PC_HOST_CHECK_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "vmm/core/vcpu_exit.h"
#include "vmm/kvm/kvm.h"

namespace minivmm {

// The refusal's first words; the rest says how the probe's run ended.
inline constexpr std::string_view kPcNoProtectedModeEvents =
    "the pc machine cannot run here: this host's KVM does not deliver an exception to a guest "
    "in 32-bit protected mode and return from it";

// What the probe's handler writes, and where.
inline constexpr uint16_t kPcProbePort = 0x80;
inline constexpr uint8_t kPcProbeByte = 0x5a;

// The probe's verdict on the first exit its run ended with: OK for the
// write after the handler's iret; otherwise FailedPrecondition,
// "<kPcNoProtectedModeEvents> (a #UD through the guest's IDT and its
// handler's iret ended in <what happened>)".
absl::Status JudgePcEventProbe(const VcpuExit& exit);

// Runs the probe (a few milliseconds; `limit` bounds a vCPU that never comes
// back) and judges it. Errors: KVM's own (creating the VM or vCPU) as they
// come; the refusal above as FailedPrecondition.
absl::Status CheckPcMachineRunsHere(const KvmSystem& kvm, absl::Duration limit = absl::Seconds(5));

}  // namespace minivmm

#endif  // MINIVMM_VMM_MACHINE_PC_HOST_CHECK_H_
