#include "vmm/boot/acpi_tables.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <span>
#include <vector>

#include "absl/strings/str_format.h"

namespace minivmm {
namespace {

// The layouts of ACPI 6.5 chapter 5.2 in their ACPI 1.0 forms: little
// endian, every field at its natural alignment but the override's GSI.
struct AcpiHeader {
  char signature[4];
  uint32_t length;
  uint8_t revision;
  uint8_t checksum;
  char oem_id[6];
  char oem_table_id[8];
  uint32_t oem_revision;
  char creator_id[4];
  uint32_t creator_revision;
};
static_assert(sizeof(AcpiHeader) == 36);

struct AcpiRsdp {
  char signature[8];
  uint8_t checksum;
  char oem_id[6];
  uint8_t revision;
  uint32_t rsdt_address;
};
static_assert(sizeof(AcpiRsdp) == 20);

// Room for three entries: the FADT, the MADT and the DMAR where there is
// one; the header's length says how many there are.
struct AcpiRsdt {
  AcpiHeader header;
  uint32_t entries[3];
};
static_assert(sizeof(AcpiRsdt) == 48 && kAcpiRsdtGpa + sizeof(AcpiRsdt) <= kAcpiFadtGpa);

// The DMAR with one DRHD and its one device scope, the IOAPIC (VT-d 3.4,
// 8.1, 8.3, 8.3.1).
struct __attribute__((packed)) AcpiDmar {
  AcpiHeader header;
  uint8_t host_address_width;
  uint8_t flags;
  uint8_t reserved[10];
  struct __attribute__((packed)) {
    uint16_t type, length;
    uint8_t flags, reserved;
    uint16_t segment;
    uint64_t register_base;
    struct __attribute__((packed)) {
      uint8_t type, length;
      uint16_t reserved;
      uint8_t enumeration_id, start_bus;
      uint8_t path_device, path_function;
    } ioapic;
  } drhd;
};
static_assert(sizeof(AcpiDmar) == 72 && kAcpiDmarGpa + sizeof(AcpiDmar) <= kAcpiDmarEnd);
constexpr uint8_t kDmarIntrRemap = 1, kDmarX2apicOptOut = 2;
constexpr uint16_t kDmarTypeDrhd = 0;
constexpr uint8_t kDrhdIncludePciAll = 1;
constexpr uint8_t kDmarScopeIoapic = 3;
// Where QEMU's q35 says its IOAPIC is as a requester (Q35_PSEUDO_BUS_PLATFORM
// and Q35_PSEUDO_DEVFN_IOAPIC 0xF8).
constexpr uint8_t kDmarIoapicBus = 0xFF, kDmarIoapicDevice = 0x1F, kDmarIoapicFunction = 0;

struct AcpiFadt {
  AcpiHeader header;
  uint32_t firmware_ctrl;
  uint32_t dsdt;
  uint8_t int_model;
  uint8_t reserved1;
  uint16_t sci_int;
  uint32_t smi_cmd;
  uint8_t acpi_enable, acpi_disable, s4bios_req, reserved2;
  uint32_t pm1a_evt_blk, pm1b_evt_blk, pm1a_cnt_blk, pm1b_cnt_blk, pm2_cnt_blk;
  uint32_t pm_tmr_blk, gpe0_blk, gpe1_blk;
  uint8_t pm1_evt_len, pm1_cnt_len, pm2_cnt_len, pm_tmr_len;
  uint8_t gpe0_blk_len, gpe1_blk_len, gpe1_base, reserved3;
  uint16_t p_lvl2_lat, p_lvl3_lat, flush_size, flush_stride;
  uint8_t duty_offset, duty_width, day_alrm, mon_alrm, century;
  uint8_t reserved4[3];
  uint32_t flags;
};
static_assert(sizeof(AcpiFadt) == 116);
static_assert(offsetof(AcpiFadt, pm_tmr_blk) == 76 && offsetof(AcpiFadt, pm_tmr_len) == 91);

struct AcpiFacs {
  char signature[4];
  uint32_t length;
  uint32_t hardware_signature;
  uint32_t waking_vector;
  uint32_t global_lock;
  uint32_t flags;
  uint8_t reserved[40];
};
static_assert(sizeof(AcpiFacs) == 64);

struct AcpiMadt {
  AcpiHeader header;
  uint32_t local_apic_address;
  uint32_t flags;
};
static_assert(sizeof(AcpiMadt) == 44);

struct MadtLocalApic {
  uint8_t type, length, processor_id, apic_id;
  uint32_t flags;
};
static_assert(sizeof(MadtLocalApic) == 8);

struct MadtIoApic {
  uint8_t type, length, id, reserved;
  uint32_t address, gsi_base;
};
static_assert(sizeof(MadtIoApic) == 12);

// Packed: the specification puts the 32-bit GSI at offset 4 and the flags at
// 8, ten bytes in all, which natural alignment would pad to twelve.
struct [[gnu::packed]] MadtInterruptOverride {
  uint8_t type, length, bus, source;
  uint32_t gsi;
  uint16_t flags;
};
static_assert(sizeof(MadtInterruptOverride) == 10);

constexpr uint8_t kFadtIntModelApic = 1;  // ACPI 1.0's INT_MODEL: multiple APICs
constexpr uint32_t kFadtWbinvd = 1;       // WBINVD flushes every cache, as on any x86
constexpr uint8_t kPmTimerLen = 4;
constexpr uint8_t kPm1EventLen = 4;    // PM1_STS and PM1_EN, two bytes each
constexpr uint8_t kPm1ControlLen = 2;  // PM1_CNT

// AML (ACPI 6.5, 20.2): Name (_Sx_, Package () {SLP_TYPa, SLP_TYPb, 0, 0}),
// with SLP_TYP 0 or 1, ZeroOp or OneOp.
constexpr uint8_t kAmlNameOp = 0x08, kAmlPackageOp = 0x12, kAmlZeroOp = 0x00, kAmlOneOp = 0x01;
std::array<uint8_t, 12> SleepStatePackage(char state, uint8_t slp_typ) {
  const uint8_t typ = slp_typ == 0 ? kAmlZeroOp : kAmlOneOp;
  return {kAmlNameOp, '_', 'S', static_cast<uint8_t>(state), '_', kAmlPackageOp,
          /*PkgLength: itself, NumElements, four elements*/ 6, /*NumElements*/ 4, typ, typ,
          kAmlZeroOp, kAmlZeroOp};
}
static_assert(kAcpiSleepTypeS3 <= 1 && kAcpiSleepTypeS5 <= 1, "ZeroOp or OneOp");
constexpr uint8_t kIsaBus = 0, kTimerIrq = 0, kTimerGsi = 2;
constexpr uint16_t kOverrideConformsToBus = 0;  // polarity and trigger those of ISA

// Copies a string constant without its NUL into a fixed, unterminated field.
template <size_t N, size_t M>
void SetChars(char (&field)[N], const char (&text)[M]) {
  static_assert(M == N + 1, "the field holds the text without its NUL");
  std::memcpy(field, text, N);
}

template <size_t M>
AcpiHeader MakeAcpiHeader(const char (&signature)[M], uint32_t length, uint8_t revision) {
  AcpiHeader header{};
  SetChars(header.signature, signature);
  header.length = length;
  header.revision = revision;
  SetChars(header.oem_id, kAcpiOemId);
  SetChars(header.oem_table_id, kAcpiOemTableId);
  header.oem_revision = kAcpiOemRevision;
  SetChars(header.creator_id, kAcpiCreatorId);
  header.creator_revision = kAcpiCreatorRevision;
  return header;
}

// The tables are built in a host copy of [kAcpiAreaStart, kAcpiDmarEnd) and
// written to the guest in one checked store.
using AcpiImage = std::vector<uint8_t>;

template <typename T>
void PutAcpi(AcpiImage& image, uint64_t gpa, const T& value) {
  // Safety: every caller's gpa + sizeof(T) lies below kAcpiDmarEnd, the
  // image's end (the MADT's length is checked before it is built).
  std::memcpy(image.data() + (gpa - kAcpiAreaStart), &value, sizeof(T));
}

// Makes the `length` bytes at gpa sum to 0 mod 256 through the byte at
// gpa + checksum_offset.
void SealAcpi(AcpiImage& image, uint64_t gpa, uint32_t length, uint32_t checksum_offset) {
  const std::span<uint8_t> table(image.data() + (gpa - kAcpiAreaStart), length);
  table[checksum_offset] = 0;
  uint8_t sum = 0;
  for (uint8_t byte : table) sum += byte;
  table[checksum_offset] = static_cast<uint8_t>(-sum);
}

constexpr uint32_t kHeaderChecksumOffset = offsetof(AcpiHeader, checksum);

template <typename T>
void PutSealedAcpi(AcpiImage& image, uint64_t gpa, const T& table) {
  PutAcpi(image, gpa, table);
  SealAcpi(image, gpa, sizeof(T), kHeaderChecksumOffset);
}

void PutFadt(AcpiImage& image, const AcpiMachine& machine) {
  AcpiFadt fadt{};
  fadt.header = MakeAcpiHeader(kAcpiFadtSignature, sizeof(AcpiFadt), 1);
  fadt.firmware_ctrl = kAcpiFacsGpa;
  fadt.dsdt = kAcpiDsdtGpa;
  fadt.int_model = kFadtIntModelApic;
  fadt.sci_int = machine.sci_irq;
  // SMI_CMD 0: no SMI command port, ACPI is always enabled.
  fadt.pm1a_evt_blk = machine.pm1_event_port;
  fadt.pm1_evt_len = machine.pm1_event_port != 0 ? kPm1EventLen : 0;
  fadt.pm1a_cnt_blk = machine.pm1_control_port;
  fadt.pm1_cnt_len = machine.pm1_control_port != 0 ? kPm1ControlLen : 0;
  fadt.pm_tmr_blk = machine.pm_timer_port;
  fadt.pm_tmr_len = kPmTimerLen;
  fadt.flags = kFadtWbinvd;  // TMR_VAL_EXT (bit 8) clear: the PM timer counts 24 bits
  PutSealedAcpi(image, kAcpiFadtGpa, fadt);
}

constexpr uint32_t MadtLength(uint32_t cpus) {
  return sizeof(AcpiMadt) + cpus * sizeof(MadtLocalApic) + sizeof(MadtIoApic) +
         sizeof(MadtInterruptOverride);
}
static_assert(MadtLength(kAcpiMaxCpus) <= kAcpiMadtEnd - kAcpiMadtGpa);

void PutMadt(AcpiImage& image, const AcpiMachine& machine) {
  const uint32_t length = MadtLength(machine.cpus);
  PutAcpi(image, kAcpiMadtGpa,
          AcpiMadt{MakeAcpiHeader(kAcpiMadtSignature, length, 1), machine.local_apic_address,
                   kMadtPcatCompat});
  uint64_t at = kAcpiMadtGpa + sizeof(AcpiMadt);
  for (uint32_t cpu = 0; cpu < machine.cpus; ++cpu, at += sizeof(MadtLocalApic)) {
    const auto id = static_cast<uint8_t>(cpu);
    PutAcpi(
        image, at,
        MadtLocalApic{kMadtTypeLocalApic, sizeof(MadtLocalApic), id, id, kMadtLocalApicEnabled});
  }
  PutAcpi(image, at,
          MadtIoApic{kMadtTypeIoApic, sizeof(MadtIoApic), machine.ioapic_id, 0,
                     machine.ioapic_address, 0});
  at += sizeof(MadtIoApic);
  PutAcpi(image, at,
          MadtInterruptOverride{kMadtTypeInterruptOverride, sizeof(MadtInterruptOverride), kIsaBus,
                                kTimerIrq, kTimerGsi, kOverrideConformsToBus});
  SealAcpi(image, kAcpiMadtGpa, length, kHeaderChecksumOffset);
}

void PutDmar(AcpiImage& image, const AcpiMachine& machine) {
  AcpiDmar dmar{};
  dmar.header = MakeAcpiHeader(kAcpiDmarSignature, sizeof(AcpiDmar), 1);
  dmar.host_address_width = machine.dmar_host_address_width;
  dmar.flags = kDmarIntrRemap | kDmarX2apicOptOut;
  dmar.drhd.type = kDmarTypeDrhd;
  dmar.drhd.length = sizeof(dmar.drhd);
  dmar.drhd.flags = kDrhdIncludePciAll;
  dmar.drhd.register_base = machine.dmar_register_base;
  dmar.drhd.ioapic = {kDmarScopeIoapic,   sizeof(dmar.drhd.ioapic), 0,
                      machine.ioapic_id,  kDmarIoapicBus,           kDmarIoapicDevice,
                      kDmarIoapicFunction};
  PutSealedAcpi(image, kAcpiDmarGpa, dmar);
}

}  // namespace

absl::StatusOr<uint64_t> WriteAcpiTables(const AcpiMachine& machine, const GuestMemory& memory) {
  if (machine.cpus == 0 || machine.cpus > kAcpiMaxCpus)
    return absl::InvalidArgumentError(
        absl::StrFormat("%u CPUs in the MADT, 1 to %u fit", machine.cpus, kAcpiMaxCpus));
  if (MadtLength(machine.cpus) > kAcpiMadtEnd - kAcpiMadtGpa)
    return absl::InvalidArgumentError("MADT larger than its place in the BIOS area");
  if (memory.size() < kAcpiAreaEnd)
    return absl::OutOfRangeError("ACPI tables need at least 1 MiB of guest RAM");

  AcpiImage image(kAcpiDmarEnd - kAcpiAreaStart, 0);
  AcpiRsdp rsdp{};
  SetChars(rsdp.signature, kAcpiRsdpSignature);
  SetChars(rsdp.oem_id, kAcpiOemId);
  rsdp.revision = 0;  // ACPI 1.0: no length, XSDT or extended checksum follow
  rsdp.rsdt_address = kAcpiRsdtGpa;
  PutAcpi(image, kAcpiRsdpGpa, rsdp);
  SealAcpi(image, kAcpiRsdpGpa, sizeof(AcpiRsdp), offsetof(AcpiRsdp, checksum));

  const bool dmar = machine.dmar_register_base != 0;
  const uint32_t rsdt_length = sizeof(AcpiHeader) + (dmar ? 3 : 2) * sizeof(uint32_t);
  PutAcpi(image, kAcpiRsdtGpa,
          AcpiRsdt{MakeAcpiHeader(kAcpiRsdtSignature, rsdt_length, 1),
                   {kAcpiFadtGpa, kAcpiMadtGpa, dmar ? static_cast<uint32_t>(kAcpiDmarGpa) : 0}});
  SealAcpi(image, kAcpiRsdtGpa, rsdt_length, kHeaderChecksumOffset);
  if (dmar) PutDmar(image, machine);
  PutFadt(image, machine);
  AcpiFacs facs{};  // no global lock, no waking vector; the FACS has no checksum
  SetChars(facs.signature, kAcpiFacsSignature);
  facs.length = sizeof(AcpiFacs);
  PutAcpi(image, kAcpiFacsGpa, facs);
  // The DSDT: no devices described; with a PM1 control block, the sleeping
  // states it can enter. Revision 1: 32-bit integers.
  std::vector<uint8_t> aml;
  if (machine.pm1_control_port != 0) {
    for (const auto& package :
         {SleepStatePackage('3', kAcpiSleepTypeS3), SleepStatePackage('5', kAcpiSleepTypeS5)})
      aml.insert(aml.end(), package.begin(), package.end());
  }
  const auto dsdt_length = static_cast<uint32_t>(sizeof(AcpiHeader) + aml.size());
  static_assert(kAcpiDsdtGpa + sizeof(AcpiHeader) + 24 <= kAcpiMadtGpa);
  PutAcpi(image, kAcpiDsdtGpa, MakeAcpiHeader(kAcpiDsdtSignature, dsdt_length, 1));
  std::copy(aml.begin(), aml.end(), image.begin() + (kAcpiDsdtGpa + sizeof(AcpiHeader) - kAcpiAreaStart));
  SealAcpi(image, kAcpiDsdtGpa, dsdt_length, kHeaderChecksumOffset);
  PutMadt(image, machine);

  // RAM holds the whole BIOS area, checked above, so this store is not refused.
  if (!memory.Write(GuestAddress(kAcpiAreaStart), std::span<const uint8_t>(image)))
    return absl::OutOfRangeError("ACPI tables outside guest RAM");
  return kAcpiRsdpGpa;
}

}  // namespace minivmm
