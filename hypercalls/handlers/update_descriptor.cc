// update_descriptor(gpa, desc): write one TLS descriptor into the VMM-owned
// GDT. Order: gpa 8-aligned (-EINVAL), gpa inside the GDT page at
// MVMM_GDT_GPA (-EFAULT), the slot is a TLS slot 7..9 (-EPERM), the
// descriptor passes CheckTlsDescriptor (-EINVAL); then one 8-byte store of
// the descriptor with its accessed bit forced (descriptor.h). The same
// ApplyGdtStore decides trapped GDT stores, so both paths agree by
// construction. Returns 0. With no GDT page wired (env.gdt empty) every
// address is outside it: -EFAULT.
#include "absl/strings/str_format.h"
#include "hypercalls/gdt_store.h"
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"
#include "minivmm_abi/boot.h"

namespace minivmm::hc {

absl::StatusOr<uint64_t> update_descriptor(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = UpdateDescriptorArgs::From(raw);
  // Alignment comes first, before the subtraction below can hide it.
  if (!args.gpa.IsAligned(sizeof(uint64_t))) {
    return absl::InvalidArgumentError(
        absl::StrFormat("update_descriptor: gpa 0x%x is misaligned", args.gpa.value()));
  }
  if (args.gpa.value() < MVMM_GDT_GPA) {
    return absl::OutOfRangeError(
        absl::StrFormat("update_descriptor: gpa 0x%x is below the GDT", args.gpa.value()));
  }
  const uint64_t desc = args.desc;
  const GdtStoreResult store =
      ApplyGdtStore(env.gdt, args.gpa.value() - MVMM_GDT_GPA,
                    std::span(reinterpret_cast<const uint8_t*>(&desc), sizeof(desc)));
  switch (store.kind) {
    case GdtStoreKind::kApplied:
      return 0;
    case GdtStoreKind::kOutsideTable:
      return absl::OutOfRangeError(
          absl::StrFormat("update_descriptor: gpa 0x%x is outside the GDT", args.gpa.value()));
    case GdtStoreKind::kReservedSlot:
      return absl::PermissionDeniedError(
          absl::StrFormat("update_descriptor: slot %d is reserved", store.slot));
    case GdtStoreKind::kBadDescriptor:
      return absl::InvalidArgumentError(absl::StrFormat(
          "update_descriptor: 0x%016x refused: %s", desc, DescriptorVerdictName(store.verdict)));
    case GdtStoreKind::kWrongSize:   // impossible: we pass 8 bytes
    case GdtStoreKind::kMisaligned:  // impossible: checked above
    case GdtStoreKind::kCount:
      break;
  }
  return absl::InternalError("update_descriptor: unexpected GDT store result");
}

}  // namespace minivmm::hc
