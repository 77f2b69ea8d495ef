// The PC machine's ACPI tables read back as a guest reads them (as
// kvm-unit-tests' lib/x86/acpi.c does): scan the BIOS area for the RSDP,
// follow the RSDT, find tables by signature, check every checksum. The reader
// here works on raw bytes at the specification's offsets, not on the writer's
// structs.
#include "vmm/boot/acpi_tables.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "minivmm/guest_memory.h"

namespace minivmm {
namespace {

constexpr uint64_t kAcpiTestRamSize = 4 << 20;

AcpiMachine PcMachine(uint32_t cpus) {
  return {.cpus = cpus,
          .ioapic_address = 0xFEC00000,
          .ioapic_id = static_cast<uint8_t>(cpus),
          .local_apic_address = 0xFEE00000,
          .pm_timer_port = 0xB008,
          .pm1_event_port = 0xB000,
          .pm1_control_port = 0xB004,
          .sci_irq = 9};
}

// A guest's view of RAM: little-endian reads at guest-physical addresses.
class GuestView {
 public:
  explicit GuestView(const std::vector<uint8_t>& ram) : ram_(ram) {}

  uint32_t U8(uint64_t gpa) const { return ram_.at(gpa); }
  uint32_t U16(uint64_t gpa) const { return U8(gpa) | U8(gpa + 1) << 8; }
  uint32_t U32(uint64_t gpa) const { return U16(gpa) | U16(gpa + 2) << 16; }
  std::string Chars(uint64_t gpa, size_t n) const {
    return std::string(ram_.begin() + gpa, ram_.begin() + gpa + n);
  }
  uint8_t Sum(uint64_t gpa, uint64_t len) const {
    uint8_t sum = 0;
    for (uint64_t i = 0; i < len; ++i) sum += ram_.at(gpa + i);
    return sum;
  }

  // The first "RSD PTR " at a 16-byte boundary in [0xE0000, 0x100000), or 0.
  uint64_t ScanForRsdp() const {
    for (uint64_t gpa = 0xE0000; gpa < 0x100000; gpa += 16) {
      if (Chars(gpa, 8) == "RSD PTR ") return gpa;
    }
    return 0;
  }

  // Every table the RSDT lists, by signature, each checked: its length bytes
  // sum to 0, its OEM fields are minivmm's. Fails the test on a bad table.
  std::map<std::string, uint64_t> TablesFromRsdt(uint64_t rsdt) const {
    std::map<std::string, uint64_t> tables;
    CheckTable(rsdt, "RSDT");
    const uint32_t length = U32(rsdt + 4);
    EXPECT_EQ((length - 36) % 4, 0u);
    for (uint64_t entry = rsdt + 36; entry + 4 <= rsdt + length; entry += 4) {
      const uint64_t table = U32(entry);
      EXPECT_EQ(table % 16, 0u);
      const std::string signature = Chars(table, 4);
      EXPECT_FALSE(tables.contains(signature)) << signature;
      tables[signature] = table;
      CheckTable(table, signature);
    }
    return tables;
  }

  void CheckTable(uint64_t gpa, const std::string& signature) const {
    SCOPED_TRACE(signature);
    EXPECT_EQ(Chars(gpa, 4), signature);
    const uint32_t length = U32(gpa + 4);
    EXPECT_GE(length, 36u);
    EXPECT_GE(gpa, 0xE0000u);
    EXPECT_LE(gpa + length, 0x100000u);
    EXPECT_EQ(Sum(gpa, length), 0);
    EXPECT_EQ(Chars(gpa + 10, 6), "MINVMM");
    EXPECT_EQ(Chars(gpa + 16, 8), "MINIVMM ");
  }

 private:
  const std::vector<uint8_t>& ram_;
};

TEST(AcpiTablesTest, GuestFindsTheRsdpByScanningAndItPointsAtTheRsdt) {
  std::vector<uint8_t> ram(kAcpiTestRamSize, 0);
  GuestMemory memory(ram);
  const uint64_t rsdp = WriteAcpiTables(PcMachine(1), memory).value();
  const GuestView guest(ram);
  ASSERT_EQ(guest.ScanForRsdp(), rsdp);
  EXPECT_EQ(guest.Sum(rsdp, 20), 0);
  EXPECT_EQ(guest.Chars(rsdp + 9, 6), "MINVMM");
  EXPECT_EQ(guest.U8(rsdp + 15), 0u);  // revision 0: ACPI 1.0, no XSDT
  const std::map<std::string, uint64_t> tables = guest.TablesFromRsdt(guest.U32(rsdp + 16));
  EXPECT_EQ(tables.size(), 2u);
  EXPECT_TRUE(tables.contains("FACP"));
  EXPECT_TRUE(tables.contains("APIC"));
}

// With an Intel IOMMU (the q35 machine's), the RSDT lists a DMAR after the
// MADT, read at the VT-d specification's offsets (8.1, 8.3, 8.3.1).
TEST(AcpiTablesTest, DmarDescribesTheIommuAndTheIoapicAsItsScope) {
  std::vector<uint8_t> ram(kAcpiTestRamSize, 0);
  GuestMemory memory(ram);
  AcpiMachine machine = PcMachine(2);
  machine.dmar_register_base = 0xFED90000;
  const uint64_t rsdp = WriteAcpiTables(machine, memory).value();
  const GuestView guest(ram);
  const std::map<std::string, uint64_t> tables = guest.TablesFromRsdt(guest.U32(rsdp + 16));
  EXPECT_EQ(tables.size(), 3u);
  ASSERT_TRUE(tables.contains("DMAR"));
  const uint64_t dmar = tables.at("DMAR");
  EXPECT_EQ(guest.U32(dmar + 4), 72u);
  EXPECT_EQ(guest.U8(dmar + 36), 38u);  // host address width - 1: 39 bits
  EXPECT_EQ(guest.U8(dmar + 37), 3u);   // INTR_REMAP | X2APIC_OPT_OUT
  const uint64_t drhd = dmar + 48;
  EXPECT_EQ(guest.U16(drhd), 0u);  // DRHD
  EXPECT_EQ(guest.U16(drhd + 2), 24u);
  EXPECT_EQ(guest.U8(drhd + 4), 1u);   // INCLUDE_PCI_ALL
  EXPECT_EQ(guest.U16(drhd + 6), 0u);  // segment 0
  EXPECT_EQ(guest.U32(drhd + 8), 0xFED90000u);
  EXPECT_EQ(guest.U32(drhd + 12), 0u);
  const uint64_t scope = drhd + 16;
  EXPECT_EQ(guest.U8(scope), 3u);  // an IOAPIC
  EXPECT_EQ(guest.U8(scope + 1), 8u);
  EXPECT_EQ(guest.U8(scope + 4), 2u);     // its ID, as the MADT's
  EXPECT_EQ(guest.U8(scope + 5), 0xFFu);  // QEMU's requester ID for it: FF:1F.0
  EXPECT_EQ(guest.U8(scope + 6), 0x1Fu);
  EXPECT_EQ(guest.U8(scope + 7), 0u);
}

TEST(AcpiTablesTest, FadtGivesThePmTimerTheSciAndTheFacsAndDsdt) {
  std::vector<uint8_t> ram(kAcpiTestRamSize, 0);
  GuestMemory memory(ram);
  const uint64_t rsdp = WriteAcpiTables(PcMachine(2), memory).value();
  const GuestView guest(ram);
  const uint64_t fadt = guest.TablesFromRsdt(guest.U32(rsdp + 16)).at("FACP");
  EXPECT_EQ(guest.U32(fadt + 4), 116u);
  EXPECT_EQ(guest.U16(fadt + 46), 9u);               // SCI_INT
  EXPECT_EQ(guest.U32(fadt + 76), 0xB008u);          // PM_TMR_BLK
  EXPECT_EQ(guest.U8(fadt + 91), 4u);                // PM_TMR_LEN
  EXPECT_EQ(guest.U32(fadt + 56), 0xB000u);          // PM1a_EVT_BLK
  EXPECT_EQ(guest.U8(fadt + 88), 4u);                // PM1_EVT_LEN
  EXPECT_EQ(guest.U32(fadt + 64), 0xB004u);          // PM1a_CNT_BLK
  EXPECT_EQ(guest.U8(fadt + 89), 2u);                // PM1_CNT_LEN
  EXPECT_EQ(guest.U32(fadt + 112) & (1u << 8), 0u);  // TMR_VAL_EXT clear: 24 bits

  const uint64_t facs = guest.U32(fadt + 36);  // FIRMWARE_CTRL
  EXPECT_EQ(facs % 64, 0u);
  EXPECT_EQ(guest.Chars(facs, 4), "FACS");
  EXPECT_EQ(guest.U32(facs + 4), 64u);
  EXPECT_GE(facs, 0xE0000u);
  EXPECT_LE(facs + 64, 0x100000u);

  const uint64_t dsdt = guest.U32(fadt + 40);
  guest.CheckTable(dsdt, "DSDT");
  EXPECT_EQ(guest.U32(dsdt + 4), 60u);
  EXPECT_EQ(dsdt % 16, 0u);
  // Name (_S3_, Package () {1, 1, 0, 0}), Name (_S5_, Package () {0, 0, 0, 0}).
  const std::vector<uint8_t> aml(ram.begin() + dsdt + 36, ram.begin() + dsdt + 60);
  EXPECT_EQ(aml, (std::vector<uint8_t>{0x08, '_', 'S', '3', '_', 0x12, 6, 4, 1, 1, 0, 0,
                                       0x08, '_', 'S', '5', '_', 0x12, 6, 4, 0, 0, 0, 0}));
}

TEST(AcpiTablesTest, WithoutPm1BlocksTheDsdtIsAHeader) {
  std::vector<uint8_t> ram(kAcpiTestRamSize, 0);
  GuestMemory memory(ram);
  AcpiMachine machine = PcMachine(1);
  machine.pm1_event_port = machine.pm1_control_port = 0;
  const uint64_t rsdp = WriteAcpiTables(machine, memory).value();
  const GuestView guest(ram);
  const uint64_t fadt = guest.TablesFromRsdt(guest.U32(rsdp + 16)).at("FACP");
  EXPECT_EQ(guest.U32(fadt + 56), 0u);
  EXPECT_EQ(guest.U8(fadt + 88), 0u);
  EXPECT_EQ(guest.U32(fadt + 64), 0u);
  EXPECT_EQ(guest.U8(fadt + 89), 0u);
  const uint64_t dsdt = guest.U32(fadt + 40);
  guest.CheckTable(dsdt, "DSDT");
  EXPECT_EQ(guest.U32(dsdt + 4), 36u);
}

// One enabled local APIC per CPU with processor ID = APIC ID = its index,
// the IOAPIC, the timer's override ISA IRQ 0 -> GSI 2, and nothing else.
TEST(AcpiTablesTest, MadtListsEachCpuTheIoApicAndTheTimerOverride) {
  for (uint32_t cpus : {1u, 2u, 4u, 255u}) {
    SCOPED_TRACE(cpus);
    std::vector<uint8_t> ram(kAcpiTestRamSize, 0);
    GuestMemory memory(ram);
    const uint64_t rsdp = WriteAcpiTables(PcMachine(cpus), memory).value();
    const GuestView guest(ram);
    const uint64_t madt = guest.TablesFromRsdt(guest.U32(rsdp + 16)).at("APIC");
    EXPECT_EQ(guest.U32(madt + 36), 0xFEE00000u);
    EXPECT_EQ(guest.U32(madt + 40), 1u);  // PCAT_COMPAT
    std::vector<uint32_t> apic_ids;
    int ioapics = 0, overrides = 0, others = 0;
    const uint64_t end = madt + guest.U32(madt + 4);
    uint64_t at = madt + 44;
    while (at + 2 <= end) {
      const uint32_t type = guest.U8(at), length = guest.U8(at + 1);
      ASSERT_GE(length, 2u);
      ASSERT_LE(at + length, end);
      if (type == 0 && length == 8) {
        EXPECT_EQ(guest.U8(at + 2), guest.U8(at + 3));  // processor ID = APIC ID
        EXPECT_EQ(guest.U32(at + 4), 1u);               // enabled
        apic_ids.push_back(guest.U8(at + 3));
      } else if (type == 1 && length == 12) {
        ++ioapics;
        EXPECT_EQ(guest.U8(at + 2), cpus);
        EXPECT_EQ(guest.U32(at + 4), 0xFEC00000u);
        EXPECT_EQ(guest.U32(at + 8), 0u);  // GSI base
      } else if (type == 2 && length == 10) {
        ++overrides;
        EXPECT_EQ(guest.U8(at + 2), 0u);   // ISA
        EXPECT_EQ(guest.U8(at + 3), 0u);   // IRQ 0
        EXPECT_EQ(guest.U32(at + 4), 2u);  // GSI 2
        EXPECT_EQ(guest.U16(at + 8), 0u);  // conforms to the bus
      } else {
        ++others;
      }
      at += length;
    }
    EXPECT_EQ(at, end);
    std::vector<uint32_t> want(cpus);
    for (uint32_t cpu = 0; cpu < cpus; ++cpu) want[cpu] = cpu;
    EXPECT_EQ(apic_ids, want);
    EXPECT_EQ(ioapics, 1);
    EXPECT_EQ(overrides, 1);
    EXPECT_EQ(others, 0);
  }
}

TEST(AcpiTablesTest, NoCpusOrMoreThan255AreRefusedAndNothingIsWritten) {
  for (uint32_t cpus : {0u, 256u}) {
    SCOPED_TRACE(cpus);
    std::vector<uint8_t> ram(kAcpiTestRamSize, 0xAA);
    GuestMemory memory(ram);
    const std::vector<uint8_t> before = ram;
    EXPECT_EQ(WriteAcpiTables(PcMachine(cpus), memory).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(ram, before);
  }
}

TEST(AcpiTablesTest, RamSmallerThanOneMibIsOutOfRange) {
  std::vector<uint8_t> ram((1 << 20) - 1, 0xAA);
  GuestMemory memory(ram);
  EXPECT_EQ(WriteAcpiTables(PcMachine(1), memory).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ram, std::vector<uint8_t>((1 << 20) - 1, 0xAA));
}

TEST(AcpiTablesTest, ExactlyOneMibIsEnough) {
  std::vector<uint8_t> ram(1 << 20, 0);
  GuestMemory memory(ram);
  EXPECT_TRUE(WriteAcpiTables(PcMachine(1), memory).ok());
  EXPECT_EQ(GuestView(ram).ScanForRsdp(), WriteAcpiTables(PcMachine(1), memory).value());
}

}  // namespace
}  // namespace minivmm
