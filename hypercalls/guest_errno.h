// The one mapping from absl::Status (what every handler returns) to the
// negative Linux errno the guest sees in RAX (docs/design.md "Hypercalls").
#ifndef MINIVMM_HYPERCALLS_GUEST_ERRNO_H_
#define MINIVMM_HYPERCALLS_GUEST_ERRNO_H_

#include <cstdint>

#include "absl/status/status.h"

namespace minivmm {

// Returns 0 for OK, otherwise a negative MVMM_E* value:
//   kInvalidArgument   -> -EINVAL  bad value, alignment, descriptor, command
//   kOutOfRange        -> -EFAULT  guest range outside RAM/GDT (GuestMemory's code)
//   kPermissionDenied  -> -EPERM   privilege or a protected resource
//   kUnauthenticated   -> -EPERM
//   kResourceExhausted -> -E2BIG   a length or count above its ABI bound
//   kNotFound          -> -ENOENT
//   kUnimplemented     -> -ENOSYS  unknown number or a facility not wired
//   anything else      -> -EINVAL  (handlers do not produce these; the guest
//                                   still gets a well-formed error)
// Pure and thread-safe.
int64_t GuestErrno(const absl::Status& status);

}  // namespace minivmm

#endif  // MINIVMM_HYPERCALLS_GUEST_ERRNO_H_
