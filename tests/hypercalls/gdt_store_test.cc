#include "hypercalls/gdt_store.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "minivmm_abi/boot.h"
#include "tests/common/descriptors.h"

namespace minivmm {
namespace {

using testing::kUserTlsDesc;

class GdtStoreTest : public ::testing::Test {
 protected:
  GdtStoreResult Store(uint64_t offset, uint64_t desc) {
    uint8_t bytes[8];
    std::memcpy(bytes, &desc, 8);
    return ApplyGdtStore(gdt_, offset, bytes, cpus_);
  }
  uint64_t Slot(int slot) const {
    uint64_t value;
    std::memcpy(&value, gdt_.data() + 8 * slot, 8);
    return value;
  }
  std::vector<uint8_t> Pristine() const { return std::vector<uint8_t>(4096, 0x5A); }

  std::vector<uint8_t> gdt_ = Pristine();
  uint32_t cpus_ = 1;
};

TEST_F(GdtStoreTest, AlignedStoreToTlsSlotIsAppliedWithAccessedBit) {
  for (int slot = 7; slot <= 9; ++slot) {
    const GdtStoreResult r = Store(8 * slot, kUserTlsDesc);
    EXPECT_EQ(r.kind, GdtStoreKind::kApplied);
    EXPECT_TRUE(r.applied());
    EXPECT_EQ(r.slot, static_cast<uint32_t>(slot));
    EXPECT_EQ(r.stored, kUserTlsDesc | MVMM_DESC_ACCESSED);
    EXPECT_EQ(Slot(slot), kUserTlsDesc | MVMM_DESC_ACCESSED);
  }
}

TEST_F(GdtStoreTest, ZeroDescriptorClearsSlot) {
  EXPECT_EQ(Store(8 * 8, 0).kind, GdtStoreKind::kApplied);
  EXPECT_EQ(Slot(8), 0u);
}

TEST_F(GdtStoreTest, AppliedStoreTouchesOnlyItsEightBytes) {
  Store(8 * 7, kUserTlsDesc);
  std::vector<uint8_t> want = Pristine();
  const uint64_t stored = kUserTlsDesc | MVMM_DESC_ACCESSED;
  std::memcpy(want.data() + 56, &stored, 8);
  EXPECT_EQ(gdt_, want);
}

TEST_F(GdtStoreTest, WrongSizesAreDropped) {
  for (size_t size : {0, 1, 2, 4, 7, 9, 16}) {
    std::vector<uint8_t> data(size, 0);
    EXPECT_EQ(ApplyGdtStore(gdt_, 56, data, 1).kind, GdtStoreKind::kWrongSize) << size;
  }
  EXPECT_EQ(gdt_, Pristine());
}

TEST_F(GdtStoreTest, MisalignedStoresAreDropped) {
  for (uint64_t offset = 57; offset < 64; ++offset) {
    EXPECT_EQ(Store(offset, kUserTlsDesc).kind, GdtStoreKind::kMisaligned) << offset;
  }
  EXPECT_EQ(gdt_, Pristine());
}

TEST_F(GdtStoreTest, StoresOutsideThePageAreDropped) {
  EXPECT_EQ(Store(4096, kUserTlsDesc).kind, GdtStoreKind::kOutsideTable);
  EXPECT_EQ(Store(~0ull & ~7ull, kUserTlsDesc).kind, GdtStoreKind::kOutsideTable);
  EXPECT_EQ(Store(4088, kUserTlsDesc).kind, GdtStoreKind::kReservedSlot);  // last slot is inside
  EXPECT_EQ(ApplyGdtStore({}, 56, std::vector<uint8_t>(8), 1).kind, GdtStoreKind::kOutsideTable);
  EXPECT_EQ(gdt_, Pristine());
}

// With one vCPU, every 8-byte entry of the page but 7, 8 and 9 is refused as
// reserved; the result names the block (cpu) and the entry in it (slot).
TEST_F(GdtStoreTest, EveryNonTlsSlotIsReserved) {
  for (uint64_t entry = 0; entry < 512; ++entry) {
    if (entry >= 7 && entry <= 9) continue;
    const GdtStoreResult r = Store(8 * entry, kUserTlsDesc);
    EXPECT_EQ(r.kind, GdtStoreKind::kReservedSlot) << entry;
    EXPECT_EQ(r.cpu, entry / 16) << entry;
    EXPECT_EQ(r.slot, entry % 16) << entry;
  }
  EXPECT_EQ(gdt_, Pristine());
}

// CPU n's GDT is the n-th MVMM_GDT_STRIDE-byte block of the page; its TLS
// slots take stores exactly when the VM has CPU n.
TEST_F(GdtStoreTest, EachCpusTlsSlotsAreAppliedOnlyWhenTheVmHasThatCpu) {
  for (uint32_t cpus : {1u, 2u, 5u, MVMM_MAX_CPUS}) {
    cpus_ = cpus;
    for (uint32_t cpu = 0; cpu < MVMM_MAX_CPUS; ++cpu) {
      for (uint32_t slot = 7; slot <= 9; ++slot) {
        SCOPED_TRACE(::testing::Message() << cpus << " cpus, cpu " << cpu << " slot " << slot);
        gdt_ = Pristine();
        const uint64_t offset = MVMM_CPU_GDT_GPA(cpu) - MVMM_GDT_GPA + 8 * slot;
        const GdtStoreResult r = Store(offset, kUserTlsDesc);
        EXPECT_EQ(r.cpu, cpu);
        EXPECT_EQ(r.slot, slot);
        std::vector<uint8_t> want = Pristine();
        if (cpu < cpus) {
          EXPECT_EQ(r.kind, GdtStoreKind::kApplied);
          const uint64_t stored = kUserTlsDesc | MVMM_DESC_ACCESSED;
          std::memcpy(want.data() + offset, &stored, 8);
        } else {
          EXPECT_EQ(r.kind, GdtStoreKind::kReservedSlot);
        }
        EXPECT_EQ(gdt_, want);
      }
    }
  }
}

TEST_F(GdtStoreTest, EntriesOutsideTheTlsSlotsOfEveryBlockAreReserved) {
  cpus_ = MVMM_MAX_CPUS;
  for (uint32_t cpu = 0; cpu < MVMM_MAX_CPUS; ++cpu) {
    for (uint32_t slot = 0; slot < MVMM_GDT_STRIDE / 8; ++slot) {
      if (slot >= 7 && slot <= 9) continue;
      const GdtStoreResult r = Store(MVMM_CPU_GDT_GPA(cpu) - MVMM_GDT_GPA + 8 * slot, kUserTlsDesc);
      EXPECT_EQ(r.kind, GdtStoreKind::kReservedSlot) << cpu << " " << slot;
      EXPECT_EQ(r.cpu, cpu);
      EXPECT_EQ(r.slot, slot);
    }
  }
  EXPECT_EQ(gdt_, Pristine());
}

// A bad descriptor aimed at a CPU the VM lacks is refused for the slot
// first, as one aimed at a reserved entry is.
TEST_F(GdtStoreTest, MissingCpuIsCheckedBeforeTheDescriptor) {
  cpus_ = 2;
  EXPECT_EQ(Store(MVMM_GDT_STRIDE * 2 + 8 * 7, 0x00AF9B000000FFFFull).kind,
            GdtStoreKind::kReservedSlot);
  EXPECT_EQ(Store(MVMM_GDT_STRIDE * 1 + 8 * 7, 0x00AF9B000000FFFFull).kind,
            GdtStoreKind::kBadDescriptor);
  EXPECT_EQ(gdt_, Pristine());
}

TEST_F(GdtStoreTest, BadDescriptorIsDroppedWithVerdict) {
  const GdtStoreResult r = Store(8 * 9, 0x00CF93000000FFFFull);  // kernel data, DPL 0
  EXPECT_EQ(r.kind, GdtStoreKind::kBadDescriptor);
  EXPECT_EQ(r.verdict, DescriptorVerdict::kWrongDpl);
  EXPECT_EQ(gdt_, Pristine());
}

TEST_F(GdtStoreTest, ChecksRunInDocumentedOrder) {
  // A bad descriptor in a reserved slot is a reserved-slot refusal; a
  // misaligned store outside the page is a misalignment; a wrong size wins.
  EXPECT_EQ(Store(8 * 2, 0x00AF9B000000FFFFull).kind, GdtStoreKind::kReservedSlot);
  EXPECT_EQ(Store(4097, kUserTlsDesc).kind, GdtStoreKind::kMisaligned);
  EXPECT_EQ(ApplyGdtStore(gdt_, 4097, std::vector<uint8_t>(4), 1).kind, GdtStoreKind::kWrongSize);
}

TEST_F(GdtStoreTest, AgreesWithValidatorOverAllAttributes) {
  for (unsigned bits = 0; bits < (1u << 11); ++bits) {
    const uint64_t desc = (kUserTlsDesc & ~(0xFFull << 40) & ~(0xEull << 52)) |
                          uint64_t{bits & 0xFF} << 40 | uint64_t{bits >> 8 & 7} << 53;
    gdt_ = Pristine();
    const GdtStoreResult r = Store(8 * 7, desc);
    const bool ok = CheckTlsDescriptor(desc) == DescriptorVerdict::kOk;
    ASSERT_EQ(r.applied(), ok) << std::hex << desc;
    EXPECT_EQ(Slot(7), ok ? TlsDescriptorToStore(desc) : 0x5A5A5A5A5A5A5A5Aull);
  }
}

TEST_F(GdtStoreTest, KindNamesAreStable) {
  EXPECT_EQ(GdtStoreKindName(GdtStoreKind::kApplied), "applied");
  EXPECT_EQ(GdtStoreKindName(GdtStoreKind::kWrongSize), "wrong_size");
  EXPECT_EQ(GdtStoreKindName(GdtStoreKind::kMisaligned), "misaligned");
  EXPECT_EQ(GdtStoreKindName(GdtStoreKind::kOutsideTable), "outside_table");
  EXPECT_EQ(GdtStoreKindName(GdtStoreKind::kReservedSlot), "reserved_slot");
  EXPECT_EQ(GdtStoreKindName(GdtStoreKind::kBadDescriptor), "bad_descriptor");
}

TEST(CountTrappedGdtStoreTest, AppliedCountsDescriptorUpdateOpAndExit) {
  ExitStats stats;
  GdtStoreResult applied;
  applied.kind = GdtStoreKind::kApplied;
  CountTrappedGdtStore(stats, applied);
  EXPECT_EQ(stats.gdt_stores_applied, 1u);
  EXPECT_EQ(stats.gdt_stores_rejected, 0u);
  EXPECT_EQ(stats.causes[static_cast<int>(Cause::kDescriptorUpdate)].ops, 1u);
  EXPECT_EQ(stats.causes[static_cast<int>(Cause::kDescriptorUpdate)].exits, 1u);
}

TEST(CountTrappedGdtStoreTest, RejectedCountsOnlyRejected) {
  ExitStats stats;
  GdtStoreResult rejected;
  rejected.kind = GdtStoreKind::kMisaligned;
  CountTrappedGdtStore(stats, rejected);
  EXPECT_EQ(stats.gdt_stores_applied, 0u);
  EXPECT_EQ(stats.gdt_stores_rejected, 1u);
  EXPECT_EQ(stats.causes[static_cast<int>(Cause::kDescriptorUpdate)].ops, 0u);
  EXPECT_EQ(stats.causes[static_cast<int>(Cause::kDescriptorUpdate)].exits, 0u);
}

}  // namespace
}  // namespace minivmm
