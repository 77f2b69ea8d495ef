#include "devices/gdt_trap.h"

#include "absl/strings/str_format.h"
#include "vmm/core/waste.h"

namespace minivmm {

void GdtTrap::Read(uint64_t offset, std::span<uint8_t> data, ExitContext&) {
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = offset + i < gdt_.size() ? gdt_[offset + i] : 0xff;
}

void GdtTrap::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) {
  const GdtStoreResult result = ApplyGdtStore(gdt_, offset, data, cpus_);
  CountTrappedGdtStore(ctx.stats, result);
  if (result.applied()) {
    NoteOp(ctx.waste, kTrappedStore, Cause::kDescriptorUpdate,
           result.unchanged ? OpEffect::kUnchanged : OpEffect::kChanged);
    return;
  }
  bool& seen = logged_[static_cast<int>(result.kind)];
  if (seen) return;
  seen = true;
  notes_.push_back(
      absl::StrFormat("guest store into the GDT at offset %d dropped: %s (logged once per kind)",
                      offset, GdtStoreKindName(result.kind)));
}

}  // namespace minivmm
