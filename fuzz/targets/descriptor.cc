// Fuzzes the TLS descriptor policy (CheckTlsDescriptor, TlsDescriptorToStore,
// IsTlsSlot) against an independent model written from docs/design.md "GDT", and
// ApplyGdtStore (the trapped-GDT-store path) with any table size, vCPU count,
// offset and store width; an 8-byte store must be decided alike by
// ApplyGdtDescriptorStore (update_descriptor's path).
//
// Input: u64 descriptor, then up to 4 stores: u16 table size (% 4200),
// u8 offset mode (% 5; the vCPU count is mode / 5 % MVMM_MAX_CPUS + 1) +
// operand, u8 width (% 17), width bytes of data.
#include "hypercalls/descriptor.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/input.h"
#include "hypercalls/gdt_store.h"
#include "minivmm_abi/boot.h"

namespace minivmm::fuzz {
namespace {

// The model: the rule of docs/design.md "GDT", bit by bit, in the validator's order.
DescriptorVerdict Model(uint64_t d) {
  const unsigned type = d >> 40 & 0xF, s = d >> 44 & 1, dpl = d >> 45 & 3, p = d >> 47 & 1,
                 l = d >> 53 & 1;
  if (d == 0) return DescriptorVerdict::kOk;
  if (!p) return DescriptorVerdict::kNotPresent;
  if (!s) return DescriptorVerdict::kSystemSegment;
  if (type & 8) return DescriptorVerdict::kCodeSegment;
  if (dpl != 3) return DescriptorVerdict::kWrongDpl;
  if (l) return DescriptorVerdict::kLongBitSet;
  return DescriptorVerdict::kOk;
}

void CheckDescriptor(uint64_t d) {
  const DescriptorVerdict v = CheckTlsDescriptor(d);
  FUZZ_CHECK(v == Model(d));
  FUZZ_CHECK(DescriptorVerdictName(v)[0] != '\0');
  if (v == DescriptorVerdict::kOk) {
    const uint64_t stored = TlsDescriptorToStore(d);
    // Only the accessed bit may differ, it is set on present descriptors, and
    // what is stored is itself acceptable (a fixed point).
    FUZZ_CHECK((stored ^ d) == 0 || (stored ^ d) == MVMM_DESC_ACCESSED);
    FUZZ_CHECK(d == 0 ? stored == 0 : (stored & MVMM_DESC_ACCESSED) != 0);
    FUZZ_CHECK(CheckTlsDescriptor(stored) == DescriptorVerdict::kOk);
    FUZZ_CHECK(TlsDescriptorToStore(stored) == stored);
  }
}

void CheckStore(Input& in, uint64_t desc_hint) {
  const size_t table = in.U16() % 4200;
  std::vector<uint8_t> gdt(table, 0xC3);
  const std::vector<uint8_t> before = gdt;

  uint64_t offset;
  const uint8_t mode = in.U8();
  const uint32_t cpus = mode / 5 % MVMM_MAX_CPUS + 1;
  switch (mode % 5) {
    case 0: {  // near a TLS slot of one of the page's GDT blocks, or just past the page
      const uint8_t operand = in.U8();
      offset = operand / 4 % (MVMM_MAX_CPUS + 1) * MVMM_GDT_STRIDE +
               8 * (MVMM_GDT_TLS_FIRST + operand % 4);
      break;
    }
    case 1:
      offset = in.U16();
      break;
    case 2:
      offset = ~uint64_t{0} - in.U8();
      break;  // offset + 8 wraps
    case 3:
      offset = table - in.U8() % 16;
      break;  // at the table end
    default:
      offset = in.U64();
      break;
  }
  const size_t width = in.U8() % 17;
  std::vector<uint8_t> data(width);
  const auto bytes = in.Bytes(width);
  // Safety: in.Bytes(width) returns at most `width` bytes, the size of `data`.
  if (!bytes.empty()) std::memcpy(data.data(), bytes.data(), bytes.size());
  // Safety: `data` holds exactly 8 bytes here; desc_hint is a u64.
  if (width == 8 && bytes.size() < 8) std::memcpy(data.data(), &desc_hint, 8);

  const GdtStoreResult result = ApplyGdtStore(gdt, offset, data, cpus);
  FUZZ_CHECK(GdtStoreKindName(result.kind) != "?");

  // The expected kind, in the documented order.
  GdtStoreKind want;
  uint64_t desc = 0;
  // Safety: `data` holds exactly `width` == 8 bytes.
  if (width == 8) std::memcpy(&desc, data.data(), 8);
  if (width != 8) {
    want = GdtStoreKind::kWrongSize;
  } else if (offset % 8 != 0) {
    want = GdtStoreKind::kMisaligned;
  } else if (table < 8 || offset > table - 8) {
    want = GdtStoreKind::kOutsideTable;
  } else if (offset / MVMM_GDT_STRIDE >= cpus || !IsTlsSlot(offset % MVMM_GDT_STRIDE / 8)) {
    want = GdtStoreKind::kReservedSlot;
  } else if (Model(desc) != DescriptorVerdict::kOk) {
    want = GdtStoreKind::kBadDescriptor;
  } else {
    want = GdtStoreKind::kApplied;
  }
  FUZZ_CHECK(result.kind == want);
  if (want == GdtStoreKind::kBadDescriptor) FUZZ_CHECK(result.verdict == Model(desc));

  // Exactly the 8 addressed bytes change, and only when applied.
  if (result.applied()) {
    FUZZ_CHECK(std::memcmp(gdt.data(), before.data(), offset) == 0);
    FUZZ_CHECK(
        std::memcmp(gdt.data() + offset + 8, before.data() + offset + 8, table - offset - 8) == 0);
  } else {
    FUZZ_CHECK(gdt == before);
  }
  if (result.applied()) {
    uint64_t stored;
    // Safety: an applied store had offset + 8 <= gdt.size().
    std::memcpy(&stored, gdt.data() + offset, 8);
    FUZZ_CHECK(stored == TlsDescriptorToStore(desc) && stored == result.stored);
  }
  if (want == GdtStoreKind::kApplied || want == GdtStoreKind::kReservedSlot ||
      want == GdtStoreKind::kBadDescriptor) {
    FUZZ_CHECK(result.cpu == offset / MVMM_GDT_STRIDE);
    FUZZ_CHECK(result.slot == offset % MVMM_GDT_STRIDE / 8);
  }
  // update_descriptor's entry point decides an 8-byte store exactly the same.
  if (width == 8) {
    std::vector<uint8_t> again = before;
    const GdtStoreResult direct = ApplyGdtDescriptorStore(again, offset, desc, cpus);
    FUZZ_CHECK(direct.kind == result.kind && direct.cpu == result.cpu &&
               direct.slot == result.slot && direct.verdict == result.verdict &&
               direct.stored == result.stored);
    FUZZ_CHECK(again == gdt);
  }
  ExitStats stats;
  CountTrappedGdtStore(stats, result);
  FUZZ_CHECK(stats.gdt_stores_applied + stats.gdt_stores_rejected == 1);
}

}  // namespace
}  // namespace minivmm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace minivmm::fuzz;
  Input in(data, size);
  const uint64_t desc = in.U64();
  CheckDescriptor(desc);
  for (uint64_t slot = 0; slot < 16; ++slot) {
    FUZZ_CHECK(minivmm::IsTlsSlot(slot) == (slot >= 7 && slot <= 9));
  }
  FUZZ_CHECK(!minivmm::IsTlsSlot(desc) || (desc >= 7 && desc <= 9));
  for (int i = 0; i < 4 && !in.empty(); ++i) CheckStore(in, desc);
  return 0;
}
