#include "hypercalls/guest_errno.h"

#include "minivmm_abi/hypercall.h"

namespace minivmm {

int64_t GuestErrno(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kInvalidArgument:
      return -MVMM_EINVAL;
    case absl::StatusCode::kOutOfRange:
      return -MVMM_EFAULT;
    case absl::StatusCode::kPermissionDenied:
      return -MVMM_EPERM;
    case absl::StatusCode::kUnauthenticated:
      return -MVMM_EPERM;
    case absl::StatusCode::kResourceExhausted:
      return -MVMM_E2BIG;
    case absl::StatusCode::kNotFound:
      return -MVMM_ENOENT;
    case absl::StatusCode::kUnimplemented:
      return -MVMM_ENOSYS;
    default:
      return -MVMM_EINVAL;
  }
}

}  // namespace minivmm
