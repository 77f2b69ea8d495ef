// update_descriptor(gpa, desc): write one TLS descriptor into one vCPU's
// VMM-owned GDT (any vCPU's: CPU n's is at MVMM_CPU_GDT_GPA(n)). Order: gpa
// 8-aligned (-EINVAL), gpa inside the GDT page at MVMM_GDT_GPA (-EFAULT), the
// entry is TLS slot 7..9 of the GDT of a vCPU the VM has (-EPERM), the
// descriptor passes CheckTlsDescriptor (-EINVAL); then one 8-byte store of
// the descriptor with its accessed bit forced (descriptor.h). The same
// checks decide trapped GDT stores (ApplyGdtStore calls
// ApplyGdtDescriptorStore), so both paths agree by construction. Returns 0.
// With no GDT page wired (env.gdt empty) every address is outside it: -EFAULT.
// With no vCPU directory (env.cpus null, in tests) the VM has one vCPU.
#include "hypercalls/gdt_store.h"
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"
#include "minivmm_abi/boot.h"

namespace minivmm::hc {

HypercallResult update_descriptor(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_update_descriptor>(raw);
  // Alignment comes first, before the subtraction below can hide it.
  if (!args.gpa.IsAligned(sizeof(uint64_t))) return Refuse(MVMM_EINVAL, "gpa misaligned");
  if (args.gpa.value() < MVMM_GDT_GPA) return Refuse(MVMM_EFAULT, "gpa below the GDT");
  const uint32_t cpus = env.cpus != nullptr ? env.cpus->count() : 1;
  const GdtStoreResult store =
      ApplyGdtDescriptorStore(env.gdt, args.gpa.value() - MVMM_GDT_GPA, args.desc, cpus);
  switch (store.kind) {
    case GdtStoreKind::kApplied:
      NoteHypercallOp(env, MVMM_HC_update_descriptor, raw,
                      store.unchanged ? OpEffect::kUnchanged : OpEffect::kChanged);
      return Done(0);
    case GdtStoreKind::kOutsideTable:
      return Refuse(MVMM_EFAULT, "gpa outside the GDT");
    case GdtStoreKind::kReservedSlot:
      return Refuse(MVMM_EPERM, "slot is not a TLS slot");
    case GdtStoreKind::kBadDescriptor:
      return Refuse(MVMM_EINVAL, DescriptorVerdictName(store.verdict));  // "code segment", ...
    case GdtStoreKind::kWrongSize:   // impossible: not checked by ApplyGdtDescriptorStore
    case GdtStoreKind::kMisaligned:  // impossible: checked above
    case GdtStoreKind::kCount:
      break;
  }
  return Refuse(MVMM_EINVAL, "unexpected GDT store result");
}

}  // namespace minivmm::hc
