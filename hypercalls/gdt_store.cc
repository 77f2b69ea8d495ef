#include "hypercalls/gdt_store.h"

#include <cstring>

#include "minivmm_abi/boot.h"

namespace minivmm {

std::string_view GdtStoreKindName(GdtStoreKind kind) {
  switch (kind) {
    case GdtStoreKind::kApplied:
      return "applied";
    case GdtStoreKind::kWrongSize:
      return "wrong_size";
    case GdtStoreKind::kMisaligned:
      return "misaligned";
    case GdtStoreKind::kOutsideTable:
      return "outside_table";
    case GdtStoreKind::kReservedSlot:
      return "reserved_slot";
    case GdtStoreKind::kBadDescriptor:
      return "bad_descriptor";
    case GdtStoreKind::kCount:
      break;
  }
  return "?";
}

GdtStoreResult ApplyGdtStore(std::span<uint8_t> gdt, uint64_t offset, std::span<const uint8_t> data,
                             uint32_t cpus) {
  if (data.size() != sizeof(uint64_t)) {
    GdtStoreResult result;
    result.kind = GdtStoreKind::kWrongSize;
    return result;
  }
  uint64_t desc;
  // Safety: data.size() == 8 was checked just above; the copy is what is validated and stored.
  std::memcpy(&desc, data.data(), sizeof(desc));
  return ApplyGdtDescriptorStore(gdt, offset, desc, cpus);
}

GdtStoreResult ApplyGdtDescriptorStore(std::span<uint8_t> gdt, uint64_t offset, uint64_t desc,
                                       uint32_t cpus) {
  GdtStoreResult result;
  if (offset % sizeof(uint64_t) != 0) {
    result.kind = GdtStoreKind::kMisaligned;
    return result;
  }
  // Written so that a huge offset cannot wrap: offset <= size - 8.
  if (gdt.size() < sizeof(uint64_t) || offset > gdt.size() - sizeof(uint64_t)) {
    result.kind = GdtStoreKind::kOutsideTable;
    return result;
  }
  // offset < gdt.size(): both fit in 32 bits.
  result.cpu = static_cast<uint32_t>(offset / MVMM_GDT_STRIDE);
  result.slot = static_cast<uint32_t>(offset % MVMM_GDT_STRIDE / sizeof(uint64_t));
  if (result.cpu >= cpus || !IsTlsSlot(result.slot)) {
    result.kind = GdtStoreKind::kReservedSlot;
    return result;
  }
  result.verdict = CheckTlsDescriptor(desc);
  if (result.verdict != DescriptorVerdict::kOk) {
    result.kind = GdtStoreKind::kBadDescriptor;
    return result;
  }
  result.stored = TlsDescriptorToStore(desc);
  result.unchanged = Load64(gdt, offset) == result.stored;
  Store64(gdt, offset, result.stored);
  return result;
}

void CountTrappedGdtStore(ExitStats& stats, const GdtStoreResult& result) {
  if (result.applied()) {
    ++stats.gdt_stores_applied;
    stats.CountCause(Cause::kDescriptorUpdate, 1, 1);
  } else {
    ++stats.gdt_stores_rejected;
  }
}

}  // namespace minivmm
