// Turns errno after a failed KVM call into an absl::Status naming the call.
#ifndef MINIVMM_VMM_KVM_KVM_ERROR_H_
#define MINIVMM_VMM_KVM_KVM_ERROR_H_

#include <errno.h>
#include <string.h>

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace minivmm {

inline absl::Status KvmError(std::string_view call, int err = errno) {
  std::string message =
      absl::StrFormat("%s failed: %s (errno %d)", call, strerrordesc_np(err), err);
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case EINVAL:
      return absl::InvalidArgumentError(message);
    case ENOMEM:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace minivmm

#endif  // MINIVMM_VMM_KVM_KVM_ERROR_H_
