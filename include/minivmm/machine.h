// The kinds of machine a VM can be (docs/machines.md): one list, from which
// the CLI's --machine, Python's machine=, the run record and the docs take
// their names. Part of the public API (docs/API.md).
#ifndef MINIVMM_MACHINE_H_
#define MINIVMM_MACHINE_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace minivmm {

enum class MachineKind : uint8_t {
  // The built-in guest's machine: every vCPU entered in 64-bit mode on the
  // VMM's page tables, GDT and TSS, the hypercall port, minivmm's own timer,
  // IPIs and HLT (docs/design.md).
  kBuiltin,
  // A standard PC: KVM's in-kernel interrupt controllers, a Multiboot-1
  // image entered in 32-bit protected mode on vCPU 0, the other vCPUs
  // started by INIT/SIPI, fw_cfg, ACPI tables and a PM timer, COM1 and the
  // debug-exit port (docs/machines.md).
  kPc,
  // The PC machine with QEMU's q35 chipset (`-M q35`): PCI bus 0 with the
  // Q35 host bridge and optionally QEMU's edu device; KVM's full irqchip, or
  // (as kvm-unit-tests' intel_iommu runs it, `kernel-irqchip=split`) KVM's
  // split irqchip with the IOAPIC in minivmm and optionally an Intel IOMMU
  // (docs/machines.md).
  kQ35,
};

struct MachineInfo {
  MachineKind kind;
  std::string_view name;     // --machine NAME, machine="NAME", the record's "machine"
  std::string_view summary;  // one line, for --help and docs
};

inline constexpr MachineInfo kMachines[] = {
    {MachineKind::kBuiltin, "builtin",
     "the built-in guest's machine: 64-bit entry, hypercall port, minivmm's own timer and IPIs"},
    {MachineKind::kPc, "pc",
     "a standard PC: Multiboot-1 image, in-kernel APIC/IOAPIC/PIC, fw_cfg, ACPI, PM timer"},
    {MachineKind::kQ35, "q35",
     "the PC with a q35 chipset: PCI, edu; KVM's full or split irqchip (minivmm's IOAPIC), VT-d"},
};

constexpr std::string_view MachineName(MachineKind kind) {
  for (const MachineInfo& m : kMachines)
    if (m.kind == kind) return m.name;
  return "?";
}

constexpr std::optional<MachineKind> MachineNamed(std::string_view name) {
  for (const MachineInfo& m : kMachines)
    if (m.name == name) return m.kind;
  return std::nullopt;
}

}  // namespace minivmm

#endif  // MINIVMM_MACHINE_H_
