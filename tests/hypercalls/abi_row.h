// Names the row and check of docs/hypercalls.md's table ("The calls") that an
// expectation covers, so that tests/docs/hypercall_rows.py can fail on a
// check no test names and on a name no row has. A check's name is derived
// from the table, never written there:
//   "<call>.ok"           the row's success column;
//   "<call>.<ERRNO>"      the row's first check with that errno, in check order;
//   "<call>.<ERRNO>.<k>"  its k-th (k >= 2), so appending a check renames none;
//   "other.ENOSYS"        the last row, a number that names no hypercall.
// AbiRow(value, name) EXPECTs the result the name implies (>= 0, or exactly
// -ERRNO), records the name as a property of the running test (gtest's
// --gtest_output=json lists it as "abi_row.<name>") and returns the value,
// so it wraps the value an existing expectation checks; a name whose errno
// the ABI does not define fails the test.
#ifndef MINIVMM_TESTS_HYPERCALLS_ABI_ROW_H_
#define MINIVMM_TESTS_HYPERCALLS_ABI_ROW_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "minivmm_abi/hypercall.h"

namespace minivmm::testing {

// The errno of a check's name ("E2BIG" in "mmu_update.E2BIG.2"), 0 for ".ok",
// -1 for a name that carries neither.
inline int AbiRowErrno(std::string_view row) {
  const size_t dot = row.find('.');
  if (dot == std::string_view::npos) return -1;
  const std::string_view check = row.substr(dot + 1, row.find('.', dot + 1) - dot - 1);
  if (check == "ok") return 0;
  struct Name {
    std::string_view name;
    int value;
  };
  for (const Name& e :
       {Name{"EPERM", MVMM_EPERM}, Name{"ENOENT", MVMM_ENOENT}, Name{"E2BIG", MVMM_E2BIG},
        Name{"EFAULT", MVMM_EFAULT}, Name{"EINVAL", MVMM_EINVAL}, Name{"ENOSYS", MVMM_ENOSYS}}) {
    if (check == e.name) return e.value;
  }
  return -1;
}

inline int64_t AbiRow(int64_t value, std::string_view row) {
  const int err = AbiRowErrno(row);
  if (err < 0) {
    ADD_FAILURE() << "'" << row << "' names no check: <call>.ok or <call>.<ERRNO>[.<k>]";
  } else if (err == 0) {
    EXPECT_GE(value, 0) << row;
  } else {
    EXPECT_EQ(value, -err) << row;
  }
  ::testing::Test::RecordProperty("abi_row." + std::string(row), 1);
  return value;
}

}  // namespace minivmm::testing

#endif  // MINIVMM_TESTS_HYPERCALLS_ABI_ROW_H_
