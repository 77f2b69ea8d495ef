// The one mapping from absl::Status (what an embedder's handler returns; see
// Vm::RegisterHypercall) to the negative Linux errno the guest sees in RAX
// (docs/design.md "Hypercalls"). Builtin handlers do not use it: they return
// HypercallResult (hypercall_result.h) with the errno already chosen, by the
// same table.
#ifndef MINIVMM_HYPERCALLS_GUEST_ERRNO_H_
#define MINIVMM_HYPERCALLS_GUEST_ERRNO_H_

#include <cstdint>

#include "absl/status/status.h"

namespace minivmm {

// Returns 0 for OK, otherwise a negative MVMM_E* value:
//   kInvalidArgument   -> -EINVAL  bad value, alignment, descriptor, command
//   kOutOfRange        -> -EFAULT  guest range outside RAM/GDT
//   kPermissionDenied  -> -EPERM   privilege or a protected resource
//   kUnauthenticated   -> -EPERM
//   kResourceExhausted -> -E2BIG   a length or count above its ABI bound
//   kNotFound          -> -ENOENT
//   kUnimplemented     -> -ENOSYS  unknown number or a facility not wired
//   anything else      -> -EINVAL  (the guest still gets a well-formed error)
// Pure and thread-safe.
int64_t GuestErrno(const absl::Status& status);

}  // namespace minivmm

#endif  // MINIVMM_HYPERCALLS_GUEST_ERRNO_H_
