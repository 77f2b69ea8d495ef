// Typed readers of the argument registers (RDI, RSI, RDX, R10, R8 = a[0..4]),
// one per hypercall, derived from the ABI's argument lists
// (MVMM_HC_ARGS_<name> in minivmm_abi/hypercall.h). Handlers read their
// arguments only through these: `ReadArgs<MVMM_HC_<name>>(raw)` has one
// field per argument, named as in that list, and a guest-physical address
// is a GuestAddress from the start.
#ifndef MINIVMM_HYPERCALLS_HANDLERS_ARGS_H_
#define MINIVMM_HYPERCALLS_HANDLERS_ARGS_H_

#include <cstdint>

#include "minivmm/guest_address.h"
#include "minivmm/hypercall_env.h"
#include "minivmm_abi/hypercall.h"

namespace minivmm::hc {

// Hypercall `nr`'s arguments, one field per entry of its MVMM_HC_ARGS_ list.
template <uint32_t nr>
struct Args;

// An argument's C++ type, by its kind in the list.
using ArgKind_gpa = GuestAddress;
using ArgKind_u64 = uint64_t;

#define MINIVMM_HC_ARG_FIELD_(reg, kind, field) ArgKind_##kind field;
#define MINIVMM_HC_ARG_READ_(reg, kind, field) ArgKind_##kind(a[reg]),
#define MINIVMM_HC_ARG_BIT_(reg, kind, field) | (1u << (reg))
#define MINIVMM_HC_ARG_ONE_(reg, kind, field) +1
#define MINIVMM_HC_ARGS_(nr, name)                                                        \
  template <>                                                                             \
  struct Args<nr> {                                                                       \
    MVMM_HC_ARGS_##name(MINIVMM_HC_ARG_FIELD_) static Args                                \
        From([[maybe_unused]] const HypercallArgs& a) {                                   \
      return {MVMM_HC_ARGS_##name(MINIVMM_HC_ARG_READ_)};                                 \
    }                                                                                     \
  };                                                                                      \
  /* Its arguments are registers 0..n-1, each once, within the ABI's five. */             \
  static_assert((0u MVMM_HC_ARGS_##name(MINIVMM_HC_ARG_BIT_)) ==                          \
                    (1u << (0 MVMM_HC_ARGS_##name(MINIVMM_HC_ARG_ONE_))) - 1u,            \
                #name ": its arguments are not registers 0..n-1, each once");             \
  static_assert((0u MVMM_HC_ARGS_##name(MINIVMM_HC_ARG_ONE_)) <= MVMM_MAX_HYPERCALL_ARGS, \
                #name ": more arguments than registers");
MVMM_HYPERCALL_LIST(MINIVMM_HC_ARGS_)
#undef MINIVMM_HC_ARGS_
#undef MINIVMM_HC_ARG_ONE_
#undef MINIVMM_HC_ARG_BIT_
#undef MINIVMM_HC_ARG_READ_
#undef MINIVMM_HC_ARG_FIELD_

// Hypercall `nr`'s arguments read from its registers.
template <uint32_t nr>
Args<nr> ReadArgs(const HypercallArgs& raw) {
  return Args<nr>::From(raw);
}

}  // namespace minivmm::hc

#endif  // MINIVMM_HYPERCALLS_HANDLERS_ARGS_H_
