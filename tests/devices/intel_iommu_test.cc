#include "devices/intel_iommu.h"

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "tests/common/device_access.h"
#include "tests/common/fake_vm.h"
#include "tests/common/recording_interrupts.h"

namespace minivmm {
namespace {

using Sent = testing::RecordingMsiSink::Sent;

// Guest-physical layout of the tables the tests build.
constexpr uint64_t kRoot = 0x10000, kContext = 0x11000, kL3 = 0x12000, kL2 = 0x13000, kL1 = 0x14000,
                   kIrt = 0x30000, kQueue = 0x40000;
constexpr uint16_t kSid = 0x0010;  // 00:02.0, the edu device's place on q35
constexpr uint64_t kR = 1, kW = 2, kRw = 3, kPs = 1 << 7;

// Fault recording register fields.
uint64_t Fr(uint64_t hi) { return (hi >> 32) & 0xFF; }
bool FrcdF(uint64_t hi) { return (hi >> 63) != 0; }
bool FrcdT(uint64_t hi) { return ((hi >> 62) & 1) != 0; }

class IntelIommuTest : public ::testing::Test {
 protected:
  uint64_t Rd(uint64_t offset, size_t size) {
    return testing::ReadLe(iommu_, offset, size, vm_.exit);
  }
  void Wr(uint64_t offset, size_t size, uint64_t value) {
    testing::WriteLe(iommu_, offset, size, value, vm_.exit);
  }
  uint32_t R32(uint64_t offset) { return static_cast<uint32_t>(Rd(offset, 4)); }
  uint64_t R64(uint64_t offset) { return Rd(offset, 8); }
  void W32(uint64_t offset, uint32_t value) { Wr(offset, 4, value); }
  void W64(uint64_t offset, uint64_t value) { Wr(offset, 8, value); }
  // One command bit as kvm-unit-tests' vtd_gcmd_or writes it.
  void Gcmd(uint32_t bit) { W32(IntelIommu::kGcmd, R32(IntelIommu::kGsts) | bit); }

  // vtd_init: QI, root table, IR table (2^16 entries), TE, IRE.
  void InitAsKvmUnitTests() {
    Gcmd(IntelIommu::kQie);
    W64(IntelIommu::kRtaddr, kRoot);
    Gcmd(IntelIommu::kSrtp);
    W64(IntelIommu::kIrta, kIrt | 0xF);
    Gcmd(IntelIommu::kSirtp);
    Gcmd(IntelIommu::kTe);
    Gcmd(IntelIommu::kIre);
  }
  // Root entry for kSid's bus and its context entry, pointing at kL3.
  void MapContext(bool fpd = false, uint64_t hi = 1 /* AW: 39-bit */) {
    vm_.Poke64(kRoot + (kSid >> 8) * 16, kContext | 1);
    vm_.Poke64(kContext + (kSid & 0xFF) * 16, kL3 | (fpd ? 2 : 0) | 1);
    vm_.Poke64(kContext + (kSid & 0xFF) * 16 + 8, hi | uint64_t{kSid} << 8);
  }
  // A 4 KiB page at `iova` (below 2 MiB) mapped to `pa` with `perms`.
  void Map4k(uint64_t iova, uint64_t pa, uint64_t perms) {
    vm_.Poke64(kL3, kL2 | kRw);
    vm_.Poke64(kL2, kL1 | kRw);
    vm_.Poke64(kL1 + ((iova >> 12) & 511) * 8, pa | perms);
  }
  void Irte(uint32_t index, uint64_t lo, uint64_t hi) {
    vm_.Poke64(kIrt + index * 16, lo);
    vm_.Poke64(kIrt + index * 16 + 8, hi);
  }
  // A remappable-format MSI address for `handle`.
  static uint64_t RemapAddress(uint32_t handle, bool shv = false) {
    return 0xFEE00000 | uint64_t{handle & 0x7FFF} << 5 | 1 << 4 | (shv ? 1 << 3 : 0) |
           uint64_t{(handle >> 15) & 1} << 2;
  }
  // An IRTE's low qword: present, vector, APIC ID (xAPIC: destination 15:8).
  static uint64_t IrteLo(uint8_t vector, uint8_t apic_id, uint64_t flags = 0) {
    return 1 | flags | uint64_t{vector} << 16 | uint64_t{apic_id} << 40;
  }
  bool DmaRead(uint64_t iova, std::span<uint8_t> out, uint16_t sid = kSid) {
    return static_cast<DmaSpace&>(iommu_).Read(sid, iova, out);
  }
  bool DmaWrite(uint64_t iova, std::span<const uint8_t> in, uint16_t sid = kSid) {
    return static_cast<DmaSpace&>(iommu_).Write(sid, iova, in);
  }
  uint32_t Read32Via(uint64_t iova) {
    std::array<uint8_t, 4> b{};
    EXPECT_TRUE(DmaRead(iova, b));
    return b[0] | b[1] << 8 | b[2] << 16 | uint32_t{b[3]} << 24;
  }
  void Descriptor(uint32_t index, uint64_t lo, uint64_t hi) {
    vm_.Poke64(kQueue + index * 16, lo);
    vm_.Poke64(kQueue + index * 16 + 8, hi);
  }

  testing::FakeVm vm_;  // 1 MiB of RAM
  testing::RecordingMsiSink sink_;
  IntelIommu iommu_{&vm_.memory, &sink_};
};

// --- Registers ---

TEST_F(IntelIommuTest, NameAndPlace) {
  EXPECT_EQ(iommu_.Name(), "intel-iommu");
  EXPECT_EQ(IntelIommu::kMmioBase, 0xFED90000u);
  EXPECT_EQ(IntelIommu::kIoSize, 0x1000u);
}

TEST_F(IntelIommuTest, ResetValues) {
  EXPECT_EQ(R32(IntelIommu::kVer), 0x10u);
  EXPECT_EQ(R32(IntelIommu::kGcmd), 0u);
  EXPECT_EQ(R32(IntelIommu::kGsts), 0u);
  EXPECT_EQ(R64(IntelIommu::kRtaddr), 0u);
  EXPECT_EQ(R32(IntelIommu::kFsts), 0u);
  EXPECT_EQ(R32(IntelIommu::kFectl), 0x80000000u);  // IM set
  EXPECT_EQ(R32(IntelIommu::kIectl), 0x80000000u);
  EXPECT_EQ(R64(IntelIommu::kIqh), 0u);
  EXPECT_EQ(R64(IntelIommu::kIqt), 0u);
  EXPECT_EQ(R32(IntelIommu::kIcs), 0u);
  EXPECT_EQ(R64(IntelIommu::kFrcd), 0u);
  EXPECT_EQ(R64(IntelIommu::kFrcd + 8), 0u);
  EXPECT_EQ(R32(0x800), 0u);  // nothing there
}

TEST_F(IntelIommuTest, CapabilitiesAreWhatTheTestChecks) {
  const uint64_t cap = R64(IntelIommu::kCap);
  EXPECT_EQ(cap & 7, 2u);                         // ND
  EXPECT_EQ((cap >> 8) & 0x1F, 0x2u);             // SAGAW: 39-bit only
  EXPECT_NE(cap & (uint64_t{1} << 9), 0u);        // kvm-unit-tests' VTD_CAP_SAGAW
  EXPECT_EQ((cap >> 16) & 0x3F, 38u);             // MGAW
  EXPECT_EQ(((cap >> 24) & 0x3FF) * 16, 0x220u);  // FRO
  EXPECT_EQ((cap >> 34) & 3, 3u);                 // SLLPS: 2 MiB and 1 GiB
  EXPECT_NE(cap & (uint64_t{1} << 39), 0u);       // PSI
  EXPECT_EQ((cap >> 40) & 0xFF, 0u);              // NFR: one register
  EXPECT_EQ((cap >> 48) & 0x3F, 0x12u);           // MAMV
  const uint64_t ecap = R64(IntelIommu::kEcap);
  EXPECT_EQ(ecap & 0xF, 0xAu);                   // QI and IR; no coherency, device-IOTLB
  EXPECT_EQ(((ecap >> 8) & 0x3FF) * 16, 0xF0u);  // IRO
  EXPECT_EQ(ecap & ((uint64_t{1} << 4) | (uint64_t{1} << 6)), 0u);  // no EIM, no PT
}

TEST_F(IntelIommuTest, QwordRegistersReadAsTwoHalves) {
  const uint64_t cap = R64(IntelIommu::kCap);
  EXPECT_EQ(R32(IntelIommu::kCap), static_cast<uint32_t>(cap));
  EXPECT_EQ(R32(IntelIommu::kCap + 4), static_cast<uint32_t>(cap >> 32));
  W32(IntelIommu::kRtaddr, 0x12345000);
  W32(IntelIommu::kRtaddr + 4, 0x9);
  EXPECT_EQ(R64(IntelIommu::kRtaddr), 0x912345000u);
  W64(IntelIommu::kIrta, 0xABC0000F);
  EXPECT_EQ(R32(IntelIommu::kIrta), 0xABC0000Fu);
}

TEST_F(IntelIommuTest, BadSizesAndMisalignedAccessesAreIgnoredAndCounted) {
  W64(IntelIommu::kRtaddr, 0x5000);
  EXPECT_EQ(Rd(IntelIommu::kRtaddr, 2), 0u);
  EXPECT_EQ(Rd(IntelIommu::kRtaddr + 1, 1), 0u);
  EXPECT_EQ(Rd(IntelIommu::kRtaddr + 4, 8), 0u);  // 8 bytes not 8-aligned
  Wr(IntelIommu::kRtaddr, 2, 0xF000);
  Wr(IntelIommu::kRtaddr + 2, 4, 0xFFFFFFFF);
  Wr(IntelIommu::kIoSize, 4, 0);
  EXPECT_EQ(R64(IntelIommu::kRtaddr), 0x5000u);
  EXPECT_EQ(iommu_.ignored_accesses(), 6u);
  W32(IntelIommu::kVer, 0xFF);  // read-only: ignored and counted
  EXPECT_EQ(R32(IntelIommu::kVer), 0x10u);
  EXPECT_EQ(iommu_.ignored_accesses(), 7u);
}

TEST_F(IntelIommuTest, VtdInitLeavesTheStatusTheTestChecks) {
  Gcmd(IntelIommu::kQie);
  EXPECT_EQ(R32(IntelIommu::kGsts), IntelIommu::kQie);
  W64(IntelIommu::kRtaddr, kRoot);
  Gcmd(IntelIommu::kSrtp);
  EXPECT_EQ(R32(IntelIommu::kGsts), IntelIommu::kQie | IntelIommu::kSrtp);
  EXPECT_EQ(R64(IntelIommu::kRtaddr) & ~uint64_t{0xFFF}, kRoot);
  W64(IntelIommu::kIrta, kIrt | 0xF);
  Gcmd(IntelIommu::kSirtp);
  Gcmd(IntelIommu::kTe);
  Gcmd(IntelIommu::kIre);
  const uint32_t gsts = R32(IntelIommu::kGsts);
  EXPECT_EQ(gsts, IntelIommu::kTe | IntelIommu::kSrtp | IntelIommu::kQie | IntelIommu::kIre |
                      IntelIommu::kSirtp);
  EXPECT_EQ(R32(IntelIommu::kFsts), 0u);
  EXPECT_EQ(R64(IntelIommu::kIrta) & ~uint64_t{0xFFF}, kIrt);
  EXPECT_EQ(iommu_.unsupported_settings(), 0u);
  EXPECT_EQ(iommu_.ignored_accesses(), 0u);
}

TEST_F(IntelIommuTest, CommandBitsActOnChange) {
  InitAsKvmUnitTests();
  const uint32_t all = R32(IntelIommu::kGsts);
  W32(IntelIommu::kGcmd, all & ~IntelIommu::kTe);
  EXPECT_EQ(R32(IntelIommu::kGsts), all & ~IntelIommu::kTe);
  W32(IntelIommu::kGcmd, (all & ~IntelIommu::kTe & ~IntelIommu::kIre) | IntelIommu::kWbf);
  EXPECT_EQ(R32(IntelIommu::kGsts),
            all & ~IntelIommu::kTe & ~IntelIommu::kIre);  // WBFS never stays
  Gcmd(IntelIommu::kCfi);
  EXPECT_NE(R32(IntelIommu::kGsts) & IntelIommu::kCfi, 0u);
  W32(IntelIommu::kGcmd, R32(IntelIommu::kGsts) & ~IntelIommu::kCfi);
  EXPECT_EQ(R32(IntelIommu::kGsts) & IntelIommu::kCfi, 0u);
  // RTPS and IRTPS stay set though the guest writes them 0.
  W32(IntelIommu::kGcmd, 0);
  EXPECT_EQ(R32(IntelIommu::kGsts), IntelIommu::kSrtp | IntelIommu::kSirtp);
}

TEST_F(IntelIommuTest, RootTableIsLatchedOnlyBySrtp) {
  InitAsKvmUnitTests();
  MapContext();
  Map4k(0, 0x20000, kRw);
  vm_.Poke64(0x20000, 0x1122334455667788);
  W64(IntelIommu::kRtaddr, 0x50000);  // an empty root table, not yet latched
  EXPECT_EQ(Read32Via(0), 0x55667788u);
  Gcmd(IntelIommu::kSrtp);  // now it is: bus 0 has no root entry
  std::array<uint8_t, 4> b{};
  EXPECT_FALSE(DmaRead(0, b));
  EXPECT_EQ(Fr(R64(IntelIommu::kFrcd + 8)), 0x1u);
}

TEST_F(IntelIommuTest, RegisterInvalidationsCompleteAtOnce) {
  W64(IntelIommu::kCcmd, uint64_t{1} << 63 | uint64_t{2} << 61 | 0x1234);
  EXPECT_EQ(R64(IntelIommu::kCcmd), uint64_t{2} << 61 | uint64_t{2} << 59 | 0x1234);
  W32(IntelIommu::kIotlb + 4, 1u << 31 | 1u << 28);  // IVT, IIRG = global
  EXPECT_EQ(R64(IntelIommu::kIotlb), uint64_t{1} << 60 | uint64_t{1} << 57);
  W64(IntelIommu::kIva, 0x7000);
  EXPECT_EQ(R64(IntelIommu::kIva), 0x7000u);
}

// --- DMA remapping ---

TEST_F(IntelIommuTest, DmaWithTranslationOffIsGuestRam) {
  std::array<uint8_t, 3> in{1, 2, 3};
  EXPECT_TRUE(DmaWrite(0x8000, in));
  EXPECT_EQ(vm_.Peek64(0x8000) & 0xFFFFFF, 0x030201u);
  std::array<uint8_t, 8> out{};
  EXPECT_FALSE(DmaRead(vm_.ram.size() - 4, out));  // runs past the end
  EXPECT_EQ(iommu_.dma_faults(), 0u);
}

TEST_F(IntelIommuTest, DmaThroughFourKilobytePages) {
  InitAsKvmUnitTests();
  MapContext(/*fpd=*/true);  // as vtd_map_range sets it
  Map4k(0x0000, 0x20000, kRw);
  Map4k(0x1000, 0x25000, kRw);  // not contiguous with the first
  vm_.Poke64(0x20000, 0x12345678);
  EXPECT_EQ(Read32Via(0), 0x12345678u);  // the test's edu_dma to the device
  std::array<uint8_t, 4> word{0x78, 0x56, 0x34, 0x12};
  EXPECT_TRUE(DmaWrite(4, word));  // and back at offset 4
  EXPECT_EQ(vm_.Peek64(0x20000), 0x1234567812345678u);
  // A request across the page boundary lands in both pages.
  std::array<uint8_t, 8> across{1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_TRUE(DmaWrite(0xFFC, across));
  EXPECT_EQ(vm_.Peek64(0x20FF8) >> 32, 0x04030201u);
  EXPECT_EQ(vm_.Peek64(0x25000) & 0xFFFFFFFF, 0x08070605u);
  std::array<uint8_t, 8> back{};
  EXPECT_TRUE(DmaRead(0xFFC, back));
  EXPECT_EQ(back, across);
  EXPECT_EQ(iommu_.dma_faults(), 0u);
}

TEST_F(IntelIommuTest, DmaThroughTwoMegabyteAndOneGigabytePages) {
  InitAsKvmUnitTests();
  MapContext();
  vm_.Poke64(kL3, kL2 | kRw);
  vm_.Poke64(kL2 + 1 * 8, 0x0 | kRw | kPs);  // IOVA 2 MiB -> PA 0
  vm_.Poke64(0x54320, 0xCAFE);
  EXPECT_EQ(Read32Via(0x200000 + 0x54320), 0xCAFEu);
  vm_.Poke64(kL3 + 1 * 8, 0x0 | kR | kPs);  // IOVA 1 GiB -> PA 0, read-only
  EXPECT_EQ(Read32Via(0x40000000 + 0x54320), 0xCAFEu);
  std::array<uint8_t, 1> b{};
  EXPECT_FALSE(DmaWrite(0x40000000, b));
  EXPECT_EQ(Fr(R64(IntelIommu::kFrcd + 8)), 0x5u);
}

TEST_F(IntelIommuTest, WriteToReadOnlyPageIsRefusedAndRecorded) {
  InitAsKvmUnitTests();
  MapContext();
  Map4k(0x3000, 0x20000, kRw);
  Map4k(0x4000, 0x21000, kR);
  std::array<uint8_t, 8> in{1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_FALSE(DmaWrite(0x3FFC, in));  // the first half would be writable
  EXPECT_EQ(vm_.Peek64(0x20FF8), 0u);  // but nothing is written
  EXPECT_EQ(vm_.Peek64(0x21000), 0u);
  EXPECT_EQ(R64(IntelIommu::kFrcd), 0x4000u);  // the failing page
  const uint64_t hi = R64(IntelIommu::kFrcd + 8);
  EXPECT_TRUE(FrcdF(hi));
  EXPECT_FALSE(FrcdT(hi));  // a write
  EXPECT_EQ(Fr(hi), 0x5u);
  EXPECT_EQ(hi & 0xFFFF, kSid);
  EXPECT_EQ(R32(IntelIommu::kFsts), 2u);  // PPF
  EXPECT_EQ(iommu_.dma_faults(), 1u);
  EXPECT_EQ(iommu_.recorded_faults(), 1u);
  EXPECT_NE(iommu_.first_fault().find("0x5"), std::string::npos);
  // Reading the same page is fine.
  EXPECT_EQ(Read32Via(0x4000), 0u);
}

TEST_F(IntelIommuTest, ReadWithoutRFaultsAsARead) {
  InitAsKvmUnitTests();
  MapContext();
  Map4k(0x5000, 0x20000, kW);
  std::array<uint8_t, 4> b{};
  EXPECT_FALSE(DmaRead(0x5010, b));
  const uint64_t hi = R64(IntelIommu::kFrcd + 8);
  EXPECT_EQ(Fr(hi), 0x6u);
  EXPECT_TRUE(FrcdT(hi));
  EXPECT_EQ(R64(IntelIommu::kFrcd), 0x5000u);
}

TEST_F(IntelIommuTest, NonPresentIntermediateEntryFaultsByAccess) {
  InitAsKvmUnitTests();
  MapContext();  // kL3 is all zero
  std::array<uint8_t, 4> b{};
  EXPECT_FALSE(DmaWrite(0, b));
  EXPECT_EQ(Fr(R64(IntelIommu::kFrcd + 8)), 0x5u);
}

TEST_F(IntelIommuTest, FpdSuppressesRecordingButNotTheFault) {
  InitAsKvmUnitTests();
  MapContext(/*fpd=*/true);
  std::array<uint8_t, 4> b{};
  EXPECT_FALSE(DmaRead(0x9000, b));
  EXPECT_EQ(iommu_.dma_faults(), 1u);
  EXPECT_EQ(iommu_.recorded_faults(), 0u);
  EXPECT_EQ(R64(IntelIommu::kFrcd + 8), 0u);
  EXPECT_EQ(R32(IntelIommu::kFsts), 0u);
  EXPECT_TRUE(sink_.sent.empty());
}

TEST_F(IntelIommuTest, FaultEventIsSentWhenUnmasked) {
  W32(IntelIommu::kFedata, 0x45);
  W32(IntelIommu::kFeaddr, 0xFEE01000);
  W32(IntelIommu::kFeuaddr, 0);
  W32(IntelIommu::kFectl, 0);
  InitAsKvmUnitTests();
  MapContext();
  std::array<uint8_t, 4> b{};
  EXPECT_FALSE(DmaRead(0, b));
  ASSERT_EQ(sink_.sent.size(), 1u);
  EXPECT_EQ(sink_.sent[0].msi, (MsiMessage{0xFEE01000, 0x45}));
  EXPECT_EQ(sink_.sent[0].source, std::nullopt);
  EXPECT_EQ(R32(IntelIommu::kFectl), 0u);  // IP clear: it was sent
}

TEST_F(IntelIommuTest, MaskedFaultEventIsSentWhenUnmasked) {
  W32(IntelIommu::kFedata, 0x46);
  W32(IntelIommu::kFeaddr, 0xFEE00000);
  InitAsKvmUnitTests();
  MapContext();
  std::array<uint8_t, 4> b{};
  EXPECT_FALSE(DmaRead(0, b));
  EXPECT_TRUE(sink_.sent.empty());
  EXPECT_EQ(R32(IntelIommu::kFectl), 0xC0000000u);  // IM and IP
  W32(IntelIommu::kFectl, 0);
  ASSERT_EQ(sink_.sent.size(), 1u);
  EXPECT_EQ(sink_.sent[0].msi, (MsiMessage{0xFEE00000, 0x46}));
  EXPECT_EQ(R32(IntelIommu::kFectl), 0u);
}

TEST_F(IntelIommuTest, ServicingTheFaultClearsPendingIp) {
  InitAsKvmUnitTests();
  MapContext();
  std::array<uint8_t, 4> b{};
  EXPECT_FALSE(DmaRead(0, b));
  EXPECT_EQ(R32(IntelIommu::kFectl), 0xC0000000u);
  W32(IntelIommu::kFrcd + 12, 1u << 31);  // clear F
  EXPECT_EQ(R64(IntelIommu::kFrcd + 8) >> 63, 0u);
  EXPECT_EQ(R32(IntelIommu::kFsts), 0u);
  EXPECT_EQ(R32(IntelIommu::kFectl), 0x80000000u);
  W32(IntelIommu::kFectl, 0);
  EXPECT_TRUE(sink_.sent.empty());
}

TEST_F(IntelIommuTest, SecondFaultOverflowsAndIsDropped) {
  W32(IntelIommu::kFectl, 0);
  InitAsKvmUnitTests();
  MapContext();
  std::array<uint8_t, 4> b{};
  EXPECT_FALSE(DmaRead(0x1000, b));
  EXPECT_FALSE(DmaWrite(0x2000, b));
  EXPECT_EQ(R32(IntelIommu::kFsts), 3u);       // PPF and PFO
  EXPECT_EQ(R64(IntelIommu::kFrcd), 0x1000u);  // the first one kept
  EXPECT_EQ(iommu_.overflowed_faults(), 1u);
  EXPECT_EQ(sink_.sent.size(), 1u);   // one event for both
  EXPECT_FALSE(DmaWrite(0x3000, b));  // PFO set: not even counted as overflow
  EXPECT_EQ(iommu_.overflowed_faults(), 1u);
  EXPECT_EQ(iommu_.dma_faults(), 3u);
  W32(IntelIommu::kFrcd + 12, 1u << 31);
  EXPECT_EQ(R32(IntelIommu::kFsts), 1u);  // PFO still
  EXPECT_FALSE(DmaWrite(0x3000, b));
  EXPECT_EQ(R64(IntelIommu::kFrcd + 8) >> 63, 0u);  // not recorded while PFO
  W32(IntelIommu::kFsts, 1);                        // clear PFO
  EXPECT_EQ(R32(IntelIommu::kFsts), 0u);
  EXPECT_FALSE(DmaWrite(0x4000, b));
  EXPECT_EQ(R64(IntelIommu::kFrcd), 0x4000u);
  EXPECT_EQ(sink_.sent.size(), 2u);  // a new event
}

TEST_F(IntelIommuTest, RootAndContextFaults) {
  InitAsKvmUnitTests();
  std::array<uint8_t, 4> b{};
  auto fault_of = [&](uint16_t sid) {
    W32(IntelIommu::kFrcd + 12, 1u << 31);
    EXPECT_FALSE(DmaRead(0, b, sid));
    return Fr(R64(IntelIommu::kFrcd + 8));
  };
  EXPECT_EQ(fault_of(kSid), 0x1u);  // no root entry
  vm_.Poke64(kRoot, kContext | 1);
  EXPECT_EQ(fault_of(kSid), 0x2u);  // no context entry
  MapContext(false, /*hi=*/2);      // AW 48-bit: not offered
  EXPECT_EQ(fault_of(kSid), 0x3u);
  MapContext(false, 1 | 1 << 7);  // reserved bit
  EXPECT_EQ(fault_of(kSid), 0x3u);
  MapContext();
  vm_.Poke64(kContext + (kSid & 0xFF) * 16, kL3 | 2 << 2 | 1);  // TT pass-through
  EXPECT_EQ(fault_of(kSid), 0x3u);
  vm_.Poke64(kContext + (kSid & 0xFF) * 16, kL3 | 1 << 2 | 1);  // TT device-IOTLB
  EXPECT_EQ(fault_of(kSid), 0x3u);
  MapContext();
  W32(IntelIommu::kFrcd + 12, 1u << 31);
  EXPECT_FALSE(DmaRead(uint64_t{1} << 39, b));
  EXPECT_EQ(Fr(R64(IntelIommu::kFrcd + 8)), 0x4u);
  vm_.Poke64(kRoot, 0xFFFFFFFFF000 | 1);  // context table beyond RAM
  EXPECT_EQ(fault_of(kSid), 0x9u);
  MapContext();
  vm_.Poke64(kL3, 0x7FFFFFFFF000 | kRw);  // level-2 table beyond RAM
  EXPECT_EQ(fault_of(kSid), 0x7u);
}

TEST_F(IntelIommuTest, RootTableAtTheEndOfRamOrBeyond) {
  InitAsKvmUnitTests();
  std::array<uint8_t, 4> b{};
  W64(IntelIommu::kRtaddr, vm_.ram.size() - 0x1000);  // bus 0 is the last 16 bytes' page
  Gcmd(IntelIommu::kSrtp);
  EXPECT_FALSE(DmaRead(0, b, 0x1000 | 0));  // bus 0x10: inside, not present
  EXPECT_EQ(Fr(R64(IntelIommu::kFrcd + 8)), 0x1u);
  W32(IntelIommu::kFrcd + 12, 1u << 31);
  W64(IntelIommu::kRtaddr, ~uint64_t{0xFFF});  // root + bus * 16 would wrap
  Gcmd(IntelIommu::kSrtp);
  EXPECT_FALSE(DmaRead(0, b, 0xFF00));
  EXPECT_EQ(Fr(R64(IntelIommu::kFrcd + 8)), 0x8u);
}

TEST_F(IntelIommuTest, ScalableModeRootTableAlwaysFaults) {
  InitAsKvmUnitTests();
  MapContext();
  Map4k(0, 0x20000, kRw);
  W64(IntelIommu::kRtaddr, kRoot | 1 << 11);
  Gcmd(IntelIommu::kSrtp);
  EXPECT_EQ(iommu_.unsupported_settings(), 1u);
  std::array<uint8_t, 4> b{};
  EXPECT_FALSE(DmaRead(0, b));
  EXPECT_EQ(Fr(R64(IntelIommu::kFrcd + 8)), 0x8u);
}

TEST_F(IntelIommuTest, TranslationOutsideRamIsNoIommuFault) {
  InitAsKvmUnitTests();
  MapContext();
  Map4k(0, 0xFFFFF000, kRw);
  std::array<uint8_t, 4> b{};
  EXPECT_FALSE(DmaRead(0, b));
  EXPECT_EQ(iommu_.dma_not_ram(), 1u);
  EXPECT_EQ(iommu_.dma_faults(), 0u);
  EXPECT_EQ(R32(IntelIommu::kFsts), 0u);
}

TEST_F(IntelIommuTest, EmptyRequestSucceeds) {
  InitAsKvmUnitTests();
  EXPECT_TRUE(DmaRead(0, std::span<uint8_t>()));
  EXPECT_TRUE(DmaWrite(~uint64_t{0}, std::span<const uint8_t>()));
}

// --- Interrupt remapping ---

TEST_F(IntelIommuTest, InterruptsPassUnchangedWithRemappingOff) {
  const MsiMessage msi{0xFEE01000, 0x4031};
  iommu_.SendMsi(msi, 0x10);
  ASSERT_EQ(sink_.sent.size(), 1u);
  EXPECT_EQ(sink_.sent[0], (Sent{msi, 0x10}));
}

TEST_F(IntelIommuTest, RemappableMsiTakesItsIrte) {
  InitAsKvmUnitTests();
  Irte(1, IrteLo(0xEE, 0), uint64_t{1} << 18 | kSid);  // as vtd_setup_irte: SVT full SID
  iommu_.SendMsi({RemapAddress(1), 0}, kSid);
  ASSERT_EQ(sink_.sent.size(), 1u);
  EXPECT_EQ(sink_.sent[0], (Sent{{0xFEE00000, 0xEE}, kSid}));
  // Destination, logical mode, redirection hint, level trigger, lowest priority.
  Irte(2, IrteLo(0x41, 3, /*DM*/ 1 << 2 | /*RH*/ 1 << 3 | /*TM*/ 1 << 4 | /*DLM*/ 1 << 5), 0);
  iommu_.SendMsi({RemapAddress(2), 0}, kSid);
  ASSERT_EQ(sink_.sent.size(), 2u);
  EXPECT_EQ(sink_.sent[1].msi, (MsiMessage{0xFEE0300C, 0x41 | 1 << 8 | 1 << 15 | 1 << 14}));
  EXPECT_EQ(iommu_.remapped_interrupts(), 2u);
}

TEST_F(IntelIommuTest, HandleBit15AndSubhandle) {
  InitAsKvmUnitTests();
  Irte(0x8005, IrteLo(0x51, 1), 0);
  iommu_.SendMsi({RemapAddress(0x8005), 0}, kSid);
  Irte(0x23, IrteLo(0x52, 2), 0);
  iommu_.SendMsi({RemapAddress(0x20, /*shv=*/true), 3}, kSid);  // 0x20 + 3
  ASSERT_EQ(sink_.sent.size(), 2u);
  EXPECT_EQ(sink_.sent[0].msi, (MsiMessage{0xFEE01000, 0x51}));
  EXPECT_EQ(sink_.sent[1].msi, (MsiMessage{0xFEE02000, 0x52}));
  // Without SHV the data is not a subhandle.
  iommu_.SendMsi({RemapAddress(0x20), 3}, kSid);
  EXPECT_EQ(sink_.sent.size(), 2u);
  EXPECT_EQ(Fr(R64(IntelIommu::kFrcd + 8)), 0x22u);
}

TEST_F(IntelIommuTest, InterruptFaultsAreRecordedWithTheIndex) {
  InitAsKvmUnitTests();
  iommu_.SendMsi({RemapAddress(7), 0}, kSid);
  EXPECT_TRUE(sink_.sent.empty());
  EXPECT_EQ(R64(IntelIommu::kFrcd), uint64_t{7} << 48);
  const uint64_t hi = R64(IntelIommu::kFrcd + 8);
  EXPECT_EQ(Fr(hi), 0x22u);
  EXPECT_EQ(hi & 0xFFFF, kSid);
  EXPECT_FALSE(FrcdT(hi));
  EXPECT_EQ(iommu_.interrupt_faults(), 1u);
  EXPECT_NE(iommu_.first_fault().find("IRTE not present"), std::string::npos);
}

struct IrCase {
  const char* name;
  uint64_t irte_lo, irte_hi;
  MsiMessage msi;
  SourceId source;
  uint64_t fault;  // 0: delivered
};

TEST_F(IntelIommuTest, InterruptRemappingChecks) {
  const IrCase cases[] = {
      {"shv reserved data", IrteLo(0x30, 0), 0, {RemapAddress(4, true), 0x10000}, kSid, 0x20},
      {"not present", 0, 0, {RemapAddress(4), 0}, kSid, 0x22},
      {"reserved low", IrteLo(0x30, 0, 1 << 12), 0, {RemapAddress(4), 0}, kSid, 0x24},
      {"posted", IrteLo(0x30, 0, 1 << 15), 0, {RemapAddress(4), 0}, kSid, 0x24},
      {"reserved high", IrteLo(0x30, 0), uint64_t{1} << 20, {RemapAddress(4), 0}, kSid, 0x24},
      {"svt 3", IrteLo(0x30, 0), 3 << 18, {RemapAddress(4), 0}, kSid, 0x24},
      {"sid mismatch", IrteLo(0x30, 0), 1 << 18 | 0x18, {RemapAddress(4), 0}, kSid, 0x26},
      {"sq ignores bit 2",
       IrteLo(0x30, 0),
       1 << 18 | 1 << 16 | 0x14,
       {RemapAddress(4), 0},
       kSid,
       0},
      {"sq 1 keeps bit 1",
       IrteLo(0x30, 0),
       1 << 18 | 1 << 16 | 0x12,
       {RemapAddress(4), 0},
       kSid,
       0x26},
      {"sq ignores bits 2:0",
       IrteLo(0x30, 0),
       1 << 18 | 3 << 16 | 0x17,
       {RemapAddress(4), 0},
       kSid,
       0},
      {"bus in range", IrteLo(0x30, 0), 2 << 18 | 0x0103, {RemapAddress(4), 0}, 0x0210, 0},
      {"bus below range", IrteLo(0x30, 0), 2 << 18 | 0x0103, {RemapAddress(4), 0}, 0x0010, 0x26},
      {"bus above range", IrteLo(0x30, 0), 2 << 18 | 0x0103, {RemapAddress(4), 0}, 0x0410, 0x26},
      {"ioapic unchecked",
       IrteLo(0x30, 0),
       1 << 18 | 0x18,
       {RemapAddress(4), 0x30},
       std::nullopt,
       0},
      {"compat blocked", IrteLo(0x30, 0), 0, {0xFEE00000, 0x30}, kSid, 0x25},
  };
  for (const IrCase& c : cases) {
    SCOPED_TRACE(c.name);
    IntelIommu iommu(&vm_.memory, &sink_);
    std::array<uint8_t, 4> gsts;
    sink_.sent.clear();
    auto w = [&](uint64_t offset, uint64_t value, size_t size) {
      std::array<uint8_t, 8> d;
      for (size_t i = 0; i < 8; ++i) d[i] = static_cast<uint8_t>(value >> (8 * i));
      iommu.Write(offset, std::span<const uint8_t>(d.data(), size), vm_.exit);
    };
    w(IntelIommu::kIrta, kIrt | 0xF, 8);
    w(IntelIommu::kGcmd, IntelIommu::kSirtp, 4);
    w(IntelIommu::kGcmd, IntelIommu::kSirtp | IntelIommu::kIre, 4);
    iommu.Read(IntelIommu::kGsts, gsts, vm_.exit);
    ASSERT_EQ(gsts[3] & 0x3, 0x3);  // IRES, IRTPS
    Irte(4, c.irte_lo, c.irte_hi);
    iommu.SendMsi(c.msi, c.source);
    if (c.fault == 0) {
      ASSERT_EQ(sink_.sent.size(), 1u);
      EXPECT_EQ(sink_.sent[0].msi, (MsiMessage{0xFEE00000, 0x30}));
      EXPECT_EQ(sink_.sent[0].source, c.source);
      EXPECT_EQ(iommu.interrupt_faults(), 0u);
    } else {
      EXPECT_TRUE(sink_.sent.empty());  // IM is set at reset: no fault event either
      EXPECT_EQ(iommu.interrupt_faults(), 1u);
      std::array<uint8_t, 8> hi;
      iommu.Read(IntelIommu::kFrcd + 8, hi, vm_.exit);
      EXPECT_EQ(hi[4], c.fault);
      EXPECT_EQ(hi[7] >> 7, 1);  // F
      const uint16_t sid = c.source.value_or(0xFFFF);
      EXPECT_EQ(hi[0] | hi[1] << 8, sid);
    }
  }
}

TEST_F(IntelIommuTest, IndexBeyondTheTableSize) {
  W64(IntelIommu::kIrta, kIrt | 3);  // 16 entries
  Gcmd(IntelIommu::kSirtp);
  Gcmd(IntelIommu::kIre);
  Irte(15, IrteLo(0x30, 0), 0);
  Irte(16, IrteLo(0x31, 0), 0);
  iommu_.SendMsi({RemapAddress(15), 0}, kSid);
  iommu_.SendMsi({RemapAddress(16), 0}, kSid);
  iommu_.SendMsi({RemapAddress(0x7FFF, true), 0xFFFF}, kSid);  // 0x17FFE: no wrap to 16 bits
  ASSERT_EQ(sink_.sent.size(), 1u);
  EXPECT_EQ(Fr(R64(IntelIommu::kFrcd + 8)), 0x21u);
  EXPECT_EQ(R64(IntelIommu::kFrcd), uint64_t{16} << 48);
  EXPECT_EQ(iommu_.interrupt_faults(), 2u);
}

TEST_F(IntelIommuTest, IrteBeyondRam) {
  W64(IntelIommu::kIrta, (vm_.ram.size() - 0x1000) | 0xF);
  Gcmd(IntelIommu::kSirtp);
  Gcmd(IntelIommu::kIre);
  iommu_.SendMsi({RemapAddress(0x100), 0}, kSid);  // one page past the end
  EXPECT_EQ(Fr(R64(IntelIommu::kFrcd + 8)), 0x23u);
  W32(IntelIommu::kFrcd + 12, 1u << 31);
  W64(IntelIommu::kIrta, ~uint64_t{0xFFF} | 0xF);  // base + index * 16 would wrap
  Gcmd(IntelIommu::kSirtp);
  iommu_.SendMsi({RemapAddress(0x8000), 0}, kSid);
  EXPECT_EQ(Fr(R64(IntelIommu::kFrcd + 8)), 0x23u);
  EXPECT_TRUE(sink_.sent.empty());
}

TEST_F(IntelIommuTest, IrteFpdSuppressesRecording) {
  InitAsKvmUnitTests();
  Irte(1, IrteLo(0xEE, 0, /*FPD*/ 2), uint64_t{1} << 18 | 0x99);
  iommu_.SendMsi({RemapAddress(1), 0}, kSid);
  EXPECT_TRUE(sink_.sent.empty());
  EXPECT_EQ(iommu_.interrupt_faults(), 1u);
  EXPECT_EQ(R64(IntelIommu::kFrcd + 8), 0u);
}

TEST_F(IntelIommuTest, CompatibilityFormatPassesOnlyWithCfi) {
  InitAsKvmUnitTests();
  const MsiMessage compat{0xFEE01000, 0x4041};
  iommu_.SendMsi(compat, kSid);
  EXPECT_TRUE(sink_.sent.empty());
  EXPECT_EQ(Fr(R64(IntelIommu::kFrcd + 8)), 0x25u);
  Gcmd(IntelIommu::kCfi);
  iommu_.SendMsi(compat, kSid);
  ASSERT_EQ(sink_.sent.size(), 1u);
  EXPECT_EQ(sink_.sent[0], (Sent{compat, kSid}));
}

TEST_F(IntelIommuTest, AddressOutsideTheInterruptRangeIsDropped) {
  InitAsKvmUnitTests();
  Gcmd(IntelIommu::kCfi);
  iommu_.SendMsi({0xFED00000, 0x30}, kSid);
  iommu_.SendMsi({uint64_t{1} << 32 | 0xFEE00000, 0x30}, kSid);
  EXPECT_TRUE(sink_.sent.empty());
  EXPECT_EQ(iommu_.dropped_interrupts(), 2u);
  EXPECT_EQ(iommu_.interrupt_faults(), 0u);
}

// --- Queued invalidation ---

class IntelIommuQueueTest : public IntelIommuTest {
 protected:
  void SetUp() override {
    W64(IntelIommu::kIqa, kQueue);  // one page: 256 descriptors
    Gcmd(IntelIommu::kQie);
  }
  static uint64_t Wait(uint32_t status, bool sw, bool irq) {
    return 5 | (sw ? 1 << 5 : 0) | (irq ? 1 << 4 : 0) | uint64_t{status} << 32;
  }
};

TEST_F(IntelIommuQueueTest, WaitDescriptorWritesItsStatus) {
  Descriptor(0, 1 | 1 << 4, 0);  // context cache, global
  Descriptor(1, 2 | 1 << 4, 0);  // IOTLB, global
  Descriptor(2, 4, 0);           // interrupt entry cache
  Descriptor(3, Wait(0xAB, true, false), 0x8000);
  W64(IntelIommu::kIqt, 4 << 4);
  EXPECT_EQ(vm_.Peek64(0x8000), 0xABu);
  EXPECT_EQ(R64(IntelIommu::kIqh), 4u << 4);
  EXPECT_EQ(iommu_.descriptors_done(), 4u);
  EXPECT_EQ(R32(IntelIommu::kFsts), 0u);
}

TEST_F(IntelIommuQueueTest, WaitWithInterruptFlagSendsTheCompletionEvent) {
  W32(IntelIommu::kIedata, 0x61);
  W32(IntelIommu::kIeaddr, 0xFEE00000);
  W32(IntelIommu::kIectl, 0);
  Descriptor(0, Wait(0, false, true), 0);
  W64(IntelIommu::kIqt, 1 << 4);
  EXPECT_EQ(R32(IntelIommu::kIcs), 1u);
  ASSERT_EQ(sink_.sent.size(), 1u);
  EXPECT_EQ(sink_.sent[0], (Sent{{0xFEE00000, 0x61}, std::nullopt}));
  Descriptor(1, Wait(0, false, true), 0);
  W64(IntelIommu::kIqt, 2 << 4);
  EXPECT_EQ(sink_.sent.size(), 1u);  // IWC still set: no new event
  W32(IntelIommu::kIcs, 1);
  EXPECT_EQ(R32(IntelIommu::kIcs), 0u);
}

TEST_F(IntelIommuQueueTest, MaskedCompletionEventWaitsForUnmask) {
  W32(IntelIommu::kIedata, 0x62);
  W32(IntelIommu::kIeaddr, 0xFEE00000);
  Descriptor(0, Wait(0x1, true, true), 0x8000);
  W64(IntelIommu::kIqt, 1 << 4);
  EXPECT_EQ(vm_.Peek64(0x8000), 1u);
  EXPECT_TRUE(sink_.sent.empty());
  EXPECT_EQ(R32(IntelIommu::kIectl), 0xC0000000u);
  W32(IntelIommu::kIectl, 0);
  ASSERT_EQ(sink_.sent.size(), 1u);
  EXPECT_EQ(sink_.sent[0].msi.data, 0x62u);
  EXPECT_EQ(R32(IntelIommu::kIectl), 0u);
}

TEST_F(IntelIommuQueueTest, InvalidDescriptorStopsTheQueue) {
  W32(IntelIommu::kFectl, 0);
  Descriptor(0, 2, 0);
  Descriptor(1, 0xF, 0);  // no such type
  Descriptor(2, Wait(0x7, true, false), 0x8000);
  W64(IntelIommu::kIqt, 3 << 4);
  EXPECT_EQ(R64(IntelIommu::kIqh), 1u << 4);   // at the bad one
  EXPECT_EQ(R32(IntelIommu::kFsts), 1u << 4);  // IQE
  EXPECT_EQ(vm_.Peek64(0x8000), 0u);
  EXPECT_EQ(sink_.sent.size(), 1u);  // the fault event
  EXPECT_EQ(iommu_.queue_errors(), 1u);
  W64(IntelIommu::kIqt, 3 << 4);  // nothing happens while IQE is set
  EXPECT_EQ(R64(IntelIommu::kIqh), 1u << 4);
  Descriptor(1, 4, 0);  // fixed, IQE cleared, tail written again
  W32(IntelIommu::kFsts, 1u << 4);
  EXPECT_EQ(R32(IntelIommu::kFsts), 0u);
  W64(IntelIommu::kIqt, 3 << 4);
  EXPECT_EQ(R64(IntelIommu::kIqh), 3u << 4);
  EXPECT_EQ(vm_.Peek64(0x8000), 7u);
}

TEST_F(IntelIommuQueueTest, StatusAddressOutsideRamIsAQueueError) {
  Descriptor(0, Wait(0x7, true, false), 0xFFFFFFFFFFFFFFFC);
  W64(IntelIommu::kIqt, 1 << 4);
  EXPECT_EQ(R32(IntelIommu::kFsts), 1u << 4);
  EXPECT_EQ(R64(IntelIommu::kIqh), 0u);
}

TEST_F(IntelIommuQueueTest, TailBeyondTheQueueIsAQueueError) {
  W64(IntelIommu::kIqt, 256 << 4);
  EXPECT_EQ(R32(IntelIommu::kFsts), 1u << 4);
  EXPECT_EQ(R64(IntelIommu::kIqh), 0u);
}

TEST_F(IntelIommuQueueTest, QueueWraps) {
  for (uint32_t i = 0; i < 256; ++i) Descriptor(i, 4, 0);
  W64(IntelIommu::kIqt, 255 << 4);
  EXPECT_EQ(R64(IntelIommu::kIqh), 255u << 4);
  W64(IntelIommu::kIqt, 2 << 4);
  EXPECT_EQ(R64(IntelIommu::kIqh), 2u << 4);
  EXPECT_EQ(iommu_.descriptors_done(), 258u);
}

TEST_F(IntelIommuQueueTest, DisableIsRefusedWhileWorkIsQueued) {
  W32(IntelIommu::kFsts, 0);
  Descriptor(0, 0xE, 0);  // bad: IQH stays at 0 with IQT at 1
  W64(IntelIommu::kIqt, 1 << 4);
  W32(IntelIommu::kGcmd, R32(IntelIommu::kGsts) & ~IntelIommu::kQie);
  EXPECT_NE(R32(IntelIommu::kGsts) & IntelIommu::kQie, 0u);
  W64(IntelIommu::kIqt, 0);  // tail back at the head (IQE: only stored)
  W32(IntelIommu::kGcmd, R32(IntelIommu::kGsts) & ~IntelIommu::kQie);
  EXPECT_EQ(R32(IntelIommu::kGsts) & IntelIommu::kQie, 0u);
}

TEST_F(IntelIommuTest, HugeQueueAddressIsAQueueError) {
  W64(IntelIommu::kIqa, ~uint64_t{0xFFF} | 7);  // 32768 descriptors past the top
  Gcmd(IntelIommu::kQie);
  W64(IntelIommu::kIqt, 0x7FFF << 4);
  EXPECT_EQ(R32(IntelIommu::kFsts), 1u << 4);
  EXPECT_EQ(R64(IntelIommu::kIqh), 0u);
}

TEST_F(IntelIommuTest, QueueAtTheEndOfRam) {
  const uint64_t base = vm_.ram.size() - 0x1000;
  for (uint64_t i = 0; i < 256; ++i) vm_.Poke64(base + i * 16, 4);
  W64(IntelIommu::kIqa, base);
  Gcmd(IntelIommu::kQie);
  W64(IntelIommu::kIqt, 255 << 4);
  W64(IntelIommu::kIqt, 0);  // descriptor 255, the last 16 bytes of RAM, then wrap
  EXPECT_EQ(R32(IntelIommu::kFsts), 0u);
  EXPECT_EQ(R64(IntelIommu::kIqh), 0u);
  EXPECT_EQ(iommu_.descriptors_done(), 256u);
}

// --- Hostile guests ---

TEST_F(IntelIommuTest, GarbageEverywhereNeverCrashes) {
  uint64_t x = 0x9E3779B97F4A7C15;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int i = 0; i < 20000; ++i) {
    const uint64_t offset = next() % 0x240 & ~uint64_t{3};
    if (next() % 2) {
      W32(offset, static_cast<uint32_t>(next()));
    } else {
      W64(offset & ~uint64_t{7}, next());
    }
    // Sometimes point tables at RAM with random contents.
    if (i % 64 == 0) vm_.Poke64((next() % (vm_.ram.size() / 8)) * 8, next());
    std::array<uint8_t, 64> buf{};
    const uint64_t iova = next() % 3 == 0 ? next() : next() % 0x400000;
    (void)DmaRead(iova, std::span(buf).first(next() % 65), static_cast<uint16_t>(next()));
    (void)DmaWrite(iova, std::span(buf).first(next() % 65), static_cast<uint16_t>(next()));
    iommu_.SendMsi(
        {next() % 2 ? 0xFEE00000 | (next() & 0xFFFFF) : next(), static_cast<uint32_t>(next())},
        next() % 2 ? SourceId(static_cast<uint16_t>(next())) : std::nullopt);
  }
  EXPECT_EQ(R32(IntelIommu::kVer), 0x10u);
}

}  // namespace
}  // namespace minivmm
