// Policy for guest stores into the read-only GDT page (docs/design.md "GDT"): the
// native backend writes descriptors with plain stores, each of which exits as
// an MMIO write. The GDT MMIO device calls ApplyGdtStore; update_descriptor
// uses it too, so both paths share one validator and one store.
#ifndef MINIVMM_HYPERCALLS_GDT_STORE_H_
#define MINIVMM_HYPERCALLS_GDT_STORE_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "hypercalls/descriptor.h"
#include "minivmm/exit_stats.h"

namespace minivmm {

enum class GdtStoreKind : uint8_t {
  kApplied,        // a valid descriptor written to a TLS slot
  kWrongSize,      // not an 8-byte store
  kMisaligned,     // offset not a multiple of 8
  kOutsideTable,   // beyond the GDT page (or beyond `gdt` as given)
  kReservedSlot,   // a slot other than 7, 8, 9, or the GDT of a CPU the VM lacks
  kBadDescriptor,  // refused by CheckTlsDescriptor (see `verdict`)
  kCount
};
// Stable short name, for logs and statistics ("applied", "misaligned", ...).
std::string_view GdtStoreKindName(GdtStoreKind kind);

struct GdtStoreResult {
  GdtStoreKind kind = GdtStoreKind::kApplied;
  uint32_t cpu = 0;        // whose GDT: offset / MVMM_GDT_STRIDE, when known
  uint32_t slot = 0;       // the entry in that GDT: offset % MVMM_GDT_STRIDE / 8, when known
  uint64_t stored = 0;     // the value written (accessed bit forced) when applied
  bool unchanged = false;  // applied, and the slot already held `stored`
  DescriptorVerdict verdict = DescriptorVerdict::kOk;  // for kBadDescriptor

  bool applied() const { return kind == GdtStoreKind::kApplied; }
};

// Applies one guest store of `data` at byte `offset` into the GDT page `gdt`
// (the host view of the whole page, one GDT per vCPU every MVMM_GDT_STRIDE
// bytes) of a VM with `cpus` vCPUs. Checks, in this fixed order: size == 8,
// offset % 8 == 0, offset + 8 <= gdt.size(), the entry is a TLS slot of the
// GDT of a vCPU the VM has (cpu < `cpus`; kReservedSlot otherwise), descriptor
// accepted; the first failure is returned and `gdt` is untouched. On success
// exactly one 8-byte store of TlsDescriptorToStore(desc) is made. `data` is
// little-endian (x86). Pure apart from that store; not thread-safe against
// other writers of the same slot (one vCPU handles one exit at a time).
GdtStoreResult ApplyGdtStore(std::span<uint8_t> gdt, uint64_t offset, std::span<const uint8_t> data,
                             uint32_t cpus);

// The same for a store already known to be 8 bytes, `desc`: every check of
// ApplyGdtStore after the size, in the same order. update_descriptor calls
// this; ApplyGdtStore calls it once the size is checked.
GdtStoreResult ApplyGdtDescriptorStore(std::span<uint8_t> gdt, uint64_t offset, uint64_t desc,
                                       uint32_t cpus);

// Counts a trapped (MMIO) GDT store as docs/design.md "GDT" asks: applied stores are
// gdt_stores_applied and one descriptor-update operation and exit; all others
// are gdt_stores_rejected. For the GDT device; update_descriptor is counted by
// the dispatcher instead.
void CountTrappedGdtStore(ExitStats& stats, const GdtStoreResult& result);

}  // namespace minivmm

#endif  // MINIVMM_HYPERCALLS_GDT_STORE_H_
