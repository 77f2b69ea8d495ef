#include "vmm/machine/pc_host_check.h"

#include <array>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <variant>

#include "absl/strings/str_format.h"
#include "minivmm/guest_memory.h"
#include "vmm/core/status_macros.h"
#include "vmm/kvm/vcpu.h"
#include "vmm/machine/probe_vm.h"

namespace minivmm {
namespace {

// The probe's memory (GPA 0, 64 KiB). The code starts with the segment and
// interrupt tables' registers loaded from its own tables, then `ud2`.
constexpr uint32_t kCodeGpa = 0x1000;
constexpr uint32_t kHandlerGpa = 0x1100;
constexpr uint32_t kGdtGpa = 0x2000;
constexpr uint32_t kGdtrGpa = 0x2100;
constexpr uint32_t kIdtGpa = 0x2200;
constexpr uint32_t kIdtrGpa = 0x2300;
constexpr uint32_t kStackTop = 0x8000;
constexpr uint16_t kCodeSelector = 0x10;  // the entry's own CS (KvmVcpu::SetProtectedModeBoot)
constexpr int kUdVector = 6;

// The probe into its 64 KiB (every address below is a constant inside it,
// so a write can fail only if the memory is smaller: false then).
bool WriteProbe(const GuestMemory& memory) {
  const std::array<uint8_t, 26> code = {
      0xbc, 0x00, 0x80, 0x00, 0x00,              // mov esp, kStackTop
      0x0f, 0x01, 0x15, 0x00, 0x21, 0x00, 0x00,  // lgdt [kGdtrGpa]
      0x0f, 0x01, 0x1d, 0x00, 0x23, 0x00, 0x00,  // lidt [kIdtrGpa]
      0x0f, 0x0b,                                // ud2
      0xb0, kPcProbeByte,                        // mov al, kPcProbeByte: after the iret
      0xe6, kPcProbePort,                        // out kPcProbePort, al
      0xf4,                                      // hlt
  };
  static_assert(kStackTop == 0x8000 && kGdtrGpa == 0x2100 && kIdtrGpa == 0x2300);
  const std::array<uint8_t, 5> handler = {
      0x83, 0x04, 0x24, 0x02,  // add dword [esp], 2: return past the ud2
      0xcf,                    // iret
  };
  static_assert(kPcProbePort < 0x100, "out imm8");
  // A GDTR or IDTR: its limit, then its 32-bit base.
  struct __attribute__((packed)) TableRegister {
    uint16_t limit;
    uint32_t base;
  };
  // IDT: vector 6 a present 32-bit interrupt gate, DPL 0, to the handler.
  const uint32_t gate = kIdtGpa + 8 * kUdVector;
  return memory.Write(GuestAddress(kCodeGpa), std::span(code)) &&
         memory.Write(GuestAddress(kHandlerGpa), std::span(handler)) &&
         // GDT: 0x10 flat 32-bit code, 0x18 flat data, as the entry's selectors.
         memory.WriteObj(GuestAddress(kGdtGpa + 0x10), uint64_t{0x00cf9a000000ffff}) &&
         memory.WriteObj(GuestAddress(kGdtGpa + 0x18), uint64_t{0x00cf92000000ffff}) &&
         memory.WriteObj(GuestAddress(kGdtrGpa), TableRegister{0x20 - 1, kGdtGpa}) &&
         memory.WriteObj(GuestAddress(gate),
                         (uint32_t{kCodeSelector} << 16) | (kHandlerGpa & 0xffff)) &&
         memory.WriteObj(GuestAddress(gate + 4), (kHandlerGpa & 0xffff0000u) | 0x8e00) &&
         memory.WriteObj(GuestAddress(kIdtrGpa), TableRegister{8 * 32 - 1, kIdtGpa});
}

}  // namespace

absl::Status JudgePcEventProbe(const VcpuExit& exit) {
  if (const auto* out = std::get_if<IoOut>(&exit); out != nullptr && out->port == kPcProbePort &&
                                                   out->size == 1 && out->data.size() == 1 &&
                                                   out->data[0] == kPcProbeByte) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrFormat(
      "%s (a #UD through the guest's IDT and its handler's iret ended in %s)",
      kPcNoProtectedModeEvents, DescribeExit(exit)));
}

absl::Status CheckPcMachineRunsHere(const KvmSystem& kvm, absl::Duration limit) {
  ASSIGN_OR_RETURN(std::unique_ptr<ProbeVm> probe, ProbeVm::Create(kvm, /*irqchip=*/false));
  if (!WriteProbe(probe->memory()))
    return absl::InternalError("the pc machine's host check: its probe does not fit its memory");
  RETURN_IF_ERROR(probe->Start(kCodeGpa));
  return JudgePcEventProbe(probe->Run(limit));
}

}  // namespace minivmm
