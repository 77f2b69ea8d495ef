// The ACPI tables of the PC machine (docs/design.md "ACPI tables"): RSDP,
// RSDT, FADT, FACS, an empty DSDT and the MADT, at fixed addresses in the
// BIOS area [0xE0000, 0x100000), where a guest finds the RSDP by scanning for
// "RSD PTR " at 16-byte steps. ACPI 1.0 forms throughout (RSDP revision 0, no
// XSDT). No machine writes them yet. A pure function over GuestMemory, so it
// is unit-tested without /dev/kvm.
#ifndef MINIVMM_VMM_BOOT_ACPI_TABLES_H_
#define MINIVMM_VMM_BOOT_ACPI_TABLES_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "minivmm/guest_memory.h"

namespace minivmm {

// The BIOS area the RSDP scan covers; every table lies inside it.
inline constexpr uint64_t kAcpiAreaStart = 0xE0000;
inline constexpr uint64_t kAcpiAreaEnd = 0x100000;

// Where each table goes, every one 16-byte aligned (the FACS 64-byte, as the
// specification requires). The MADT has [kAcpiMadtGpa, kAcpiMadtEnd) to itself.
inline constexpr uint64_t kAcpiRsdpGpa = 0xE0000;  // 20 bytes
inline constexpr uint64_t kAcpiRsdtGpa = 0xE0040;  // 44 bytes: two entries
inline constexpr uint64_t kAcpiFadtGpa = 0xE0080;  // 116 bytes
inline constexpr uint64_t kAcpiFacsGpa = 0xE0100;  // 64 bytes
inline constexpr uint64_t kAcpiDsdtGpa = 0xE0140;  // 36 bytes, 60 with the sleep states
inline constexpr uint64_t kAcpiMadtGpa = 0xE0200;
inline constexpr uint64_t kAcpiMadtEnd = 0xE1000;
// The DMAR (an Intel IOMMU's remapping table), when the machine has one.
inline constexpr uint64_t kAcpiDmarGpa = 0xE1000;  // 72 bytes
inline constexpr uint64_t kAcpiDmarEnd = 0xE1100;

// Signatures, as they appear in memory.
inline constexpr char kAcpiRsdpSignature[] = "RSD PTR ";
inline constexpr char kAcpiRsdtSignature[] = "RSDT";
inline constexpr char kAcpiFadtSignature[] = "FACP";
inline constexpr char kAcpiFacsSignature[] = "FACS";
inline constexpr char kAcpiDsdtSignature[] = "DSDT";
inline constexpr char kAcpiMadtSignature[] = "APIC";
inline constexpr char kAcpiDmarSignature[] = "DMAR";

// Who made the tables: the header's OEM ID, OEM table ID and revision, and
// its creator ID and revision.
inline constexpr char kAcpiOemId[] = "MINVMM";
inline constexpr char kAcpiOemTableId[] = "MINIVMM ";
inline constexpr uint32_t kAcpiOemRevision = 1;
inline constexpr char kAcpiCreatorId[] = "MVMM";
inline constexpr uint32_t kAcpiCreatorRevision = 1;

// MADT subtable types and flags (ACPI 6.5, 5.2.12).
inline constexpr uint8_t kMadtTypeLocalApic = 0;
inline constexpr uint8_t kMadtTypeIoApic = 1;
inline constexpr uint8_t kMadtTypeInterruptOverride = 2;
inline constexpr uint32_t kMadtPcatCompat = 1;  // the MADT's flags: dual 8259s too
inline constexpr uint32_t kMadtLocalApicEnabled = 1;

// The FACS's FIRMWARE_WAKING_VECTOR (a 32-bit real-mode address the OS
// writes before sleeping; ACPI 1.0's FACS has no 64-bit one).
inline constexpr uint64_t kAcpiFacsWakingVectorOffset = 12;

// The sleeping states the DSDT names, as \_S3 and \_S5 packages: their
// SLP_TYP value for PM1_CNT (QEMU's PIIX4 values, which kvm-unit-tests' s3
// writes without reading the DSDT).
inline constexpr uint8_t kAcpiSleepTypeS3 = 1;
inline constexpr uint8_t kAcpiSleepTypeS5 = 0;

// At most this many CPUs: one byte of processor ID and APIC ID each.
inline constexpr uint32_t kAcpiMaxCpus = 255;

struct AcpiMachine {
  // One MADT local APIC entry each: processor ID = APIC ID = index, enabled.
  // 1..kAcpiMaxCpus.
  uint32_t cpus = 1;
  // The IOAPIC's MADT entry, its GSI base 0; the ID by convention the first
  // one after the CPUs' APIC IDs, that is `cpus`.
  uint32_t ioapic_address = 0xFEC00000;
  uint8_t ioapic_id = 1;
  uint32_t local_apic_address = 0xFEE00000;
  // The FADT's PM_TMR_BLK (PM_TMR_LEN 4); TMR_VAL_EXT clear: a 24-bit timer.
  uint16_t pm_timer_port = 0;
  // The FADT's PM1a_EVT_BLK (PM1_EVT_LEN 4: status and enable) and
  // PM1a_CNT_BLK (PM1_CNT_LEN 2); 0: none, and then the DSDT names no
  // sleeping state.
  uint16_t pm1_event_port = 0;
  uint16_t pm1_control_port = 0;
  // The FADT's SCI_INT, an ISA IRQ.
  uint16_t sci_irq = 9;
  // An Intel IOMMU (VT-d) whose registers are at this address, described by
  // a DMAR (Intel VT-d 3.4, chapter 8) after the MADT in the RSDT: host
  // address width `dmar_host_address_width` + 1 bits, flags INTR_REMAP and
  // X2APIC_OPT_OUT (no x2APIC-mode remapping), one DRHD with INCLUDE_PCI_ALL
  // on segment 0 whose one device scope is the IOAPIC (its ID, at QEMU's
  // place for it: bus 0xFF, device 0x1F, function 0). 0: no DMAR.
  uint64_t dmar_register_base = 0;
  uint8_t dmar_host_address_width = 38;
};

// Writes every table at its address above: the RSDP (revision 0, 20 bytes,
// pointing at the RSDT), the RSDT (the FADT, then the MADT), the FADT
// (revision 1, FIRMWARE_CTRL the FACS, DSDT the DSDT), the FACS, the DSDT (with
// PM1 blocks, the \_S3 and \_S5 packages: kAcpiSleepTypeS3/S5) and
// the MADT (flags PCAT_COMPAT; a local APIC per CPU, the IOAPIC, and an
// interrupt source override ISA IRQ 0 -> GSI 2), and the DMAR where
// dmar_register_base says so. Every table's bytes sum to 0
// mod 256 (the RSDP's first 20). Returns the RSDP's address.
// InvalidArgument when `cpus` is 0 or above kAcpiMaxCpus or the MADT would
// pass kAcpiMadtEnd; OutOfRange when RAM is smaller than 1 MiB. Nothing is
// written unless everything fits.
absl::StatusOr<uint64_t> WriteAcpiTables(const AcpiMachine& machine, const GuestMemory& memory);

}  // namespace minivmm

#endif  // MINIVMM_VMM_BOOT_ACPI_TABLES_H_
