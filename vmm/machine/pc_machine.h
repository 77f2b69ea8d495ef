// The PC machine (docs/machines.md): where its devices are, for the builder
// and for tests that check a guest's view of them.
#ifndef MINIVMM_VMM_MACHINE_PC_MACHINE_H_
#define MINIVMM_VMM_MACHINE_PC_MACHINE_H_

#include <cstdint>

namespace minivmm {

// The ACPI PM timer's port, as on QEMU's default `pc` machine (PIIX4's
// PMBASE 0xb000, the timer at +8); the FADT names it.
inline constexpr uint16_t kPcPmTimerPort = 0xb008;
// PM1's event block (status, enable) and control block at PIIX4's offsets
// from the same PMBASE (0 and +4); the FADT names them.
inline constexpr uint16_t kPcPm1EventPort = 0xb000;
inline constexpr uint16_t kPcPm1ControlPort = 0xb004;
// KVM's in-kernel IOAPIC and local APICs, at their architectural
// addresses; KVM resets the IOAPIC's ID register to 0, and the MADT says so.
inline constexpr uint32_t kPcIoapicGpa = 0xFEC00000;
inline constexpr uint32_t kPcLocalApicGpa = 0xFEE00000;
inline constexpr uint8_t kPcIoapicId = 0;

}  // namespace minivmm

#endif  // MINIVMM_VMM_MACHINE_PC_MACHINE_H_
