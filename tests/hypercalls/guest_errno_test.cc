#include "hypercalls/guest_errno.h"

#include <gtest/gtest.h>

#include "minivmm_abi/hypercall.h"

namespace minivmm {
namespace {

// The one table of absl::StatusCode -> guest errno. Every code is listed so a
// new mapping is a deliberate edit here.
TEST(GuestErrnoTest, MapsEveryStatusCode) {
  struct Row {
    absl::StatusCode code;
    int64_t errno_value;
  };
  const Row table[] = {
      {absl::StatusCode::kOk, 0},
      {absl::StatusCode::kCancelled, -MVMM_EINVAL},
      {absl::StatusCode::kUnknown, -MVMM_EINVAL},
      {absl::StatusCode::kInvalidArgument, -MVMM_EINVAL},
      {absl::StatusCode::kDeadlineExceeded, -MVMM_EINVAL},
      {absl::StatusCode::kNotFound, -MVMM_ENOENT},
      {absl::StatusCode::kAlreadyExists, -MVMM_EINVAL},
      {absl::StatusCode::kPermissionDenied, -MVMM_EPERM},
      {absl::StatusCode::kResourceExhausted, -MVMM_E2BIG},
      {absl::StatusCode::kFailedPrecondition, -MVMM_EINVAL},
      {absl::StatusCode::kAborted, -MVMM_EINVAL},
      {absl::StatusCode::kOutOfRange, -MVMM_EFAULT},
      {absl::StatusCode::kUnimplemented, -MVMM_ENOSYS},
      {absl::StatusCode::kInternal, -MVMM_EINVAL},
      {absl::StatusCode::kUnavailable, -MVMM_EINVAL},
      {absl::StatusCode::kDataLoss, -MVMM_EINVAL},
      {absl::StatusCode::kUnauthenticated, -MVMM_EPERM},
  };
  for (const Row& row : table) {
    const absl::Status status =
        row.code == absl::StatusCode::kOk ? absl::OkStatus() : absl::Status(row.code, "x");
    EXPECT_EQ(GuestErrno(status), row.errno_value) << absl::StatusCodeToString(row.code);
  }
}

TEST(GuestErrnoTest, ErrnoValuesAreTheLinuxOnes) {
  EXPECT_EQ(MVMM_EPERM, 1);
  EXPECT_EQ(MVMM_ENOENT, 2);
  EXPECT_EQ(MVMM_E2BIG, 7);
  EXPECT_EQ(MVMM_EFAULT, 14);
  EXPECT_EQ(MVMM_EINVAL, 22);
  EXPECT_EQ(MVMM_ENOSYS, 38);
}

}  // namespace
}  // namespace minivmm
