// What a PC BIOS leaves behind when it hands over to a boot loader, set by
// the PC machine itself since it has no firmware (docs/machines.md, "The PC
// machine"): the real-mode interrupt vector table with a handler for every
// vector, the two PICs initialised at the BIOS's vectors with only the timer
// and the cascade unmasked, and, where the machine has a PIT, its channel 0
// ticking at 18.2 Hz. A guest that stays in protected mode and masks the
// PICs (kvm-unit-tests' cstart does) never notices; one that goes back to
// real mode and waits with `sti; hlt` (kvm-unit-tests' realmode) is woken by
// the timer as on a PC.
#ifndef MINIVMM_VMM_BOOT_BIOS_STATE_H_
#define MINIVMM_VMM_BOOT_BIOS_STATE_H_

#include <array>
#include <cstdint>

#include "absl/status/status.h"
#include "minivmm/guest_memory.h"
#include "vmm/kvm/kvm.h"

namespace minivmm {

// The interrupt vector table: 256 far pointers (offset, then segment) at 0.
inline constexpr uint64_t kBiosIvtGpa = 0;
inline constexpr uint32_t kBiosIvtVectors = 256;
// The handlers, in the BIOS segment F000. Each acknowledges what a BIOS
// handler acknowledges and returns; none does anything else (no tick count
// in the BIOS data area, no INT 1Ch, no BIOS services: a guest asking for
// one gets an IRET).
inline constexpr uint16_t kBiosSegment = 0xF000;
// IRQ 0-7 (vectors kBiosPicMasterBase..+7): push ax; mov al,0x20;
// out 0x20,al; pop ax; iret. A non-specific EOI to the master PIC.
inline constexpr uint16_t kBiosMasterIrqOffset = 0xFF00;
inline constexpr std::array<uint8_t, 7> kBiosMasterIrqCode = {0x50, 0xB0, 0x20, 0xE6,
                                                              0x20, 0x58, 0xCF};
// IRQ 8-15 (vectors kBiosPicSlaveBase..+7): the same, EOI to the slave PIC
// and then the master (out 0xA0,al; out 0x20,al).
inline constexpr uint16_t kBiosSlaveIrqOffset = 0xFF10;
inline constexpr std::array<uint8_t, 9> kBiosSlaveIrqCode = {0x50, 0xB0, 0x20, 0xE6, 0xA0,
                                                             0xE6, 0x20, 0x58, 0xCF};
// Every other vector: iret, at the address PC BIOSes have always put it.
inline constexpr uint16_t kBiosIretOffset = 0xFF53;

// The PICs as a BIOS initialises them (ICW1 0x11, ICW2 the base, ICW3
// cascade on IRQ 2, ICW4 8086 mode): IRQ 0-7 at vectors 0x08-0x0F, IRQ 8-15
// at 0x70-0x77; unmasked only IRQ 0 (the PIT) and IRQ 2 (the cascade), the
// machine having no other ISA device a BIOS would enable.
inline constexpr KvmPicProgram kBiosPicMaster = {.vector_base = 0x08, .mask = 0xFA};
inline constexpr KvmPicProgram kBiosPicSlave = {.vector_base = 0x70, .mask = 0xFF};
// PIT channel 0: mode 2 (rate generator), count 0 (65536): 1193182 Hz /
// 65536 = 18.2 Hz.
inline constexpr uint8_t kBiosPitMode = 2;
inline constexpr uint16_t kBiosPitCount = 0;

// Writes the vector table and the handlers. OutOfRange when RAM is smaller
// than 1 MiB; nothing is written then.
absl::Status WriteBiosInterruptVectors(const GuestMemory& memory);

// The PICs and the PIT are the chipset's to program
// (vmm/machine/pc_chipset.h: PcChipset::SetBiosState), where it has them.

}  // namespace minivmm

#endif  // MINIVMM_VMM_BOOT_BIOS_STATE_H_
