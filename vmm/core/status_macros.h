// Early-return helpers for absl::Status / absl::StatusOr (Debian's Abseil
// 20220623 ships none). For .cc files of the VMM; not part of the public API.
#ifndef MINIVMM_VMM_CORE_STATUS_MACROS_H_
#define MINIVMM_VMM_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define MVMM_CONCAT_INNER_(a, b) a##b
#define MVMM_CONCAT_(a, b) MVMM_CONCAT_INNER_(a, b)

// Returns the status of `expr` from the enclosing function when it is not OK.
#define RETURN_IF_ERROR(expr)                                                        \
  do {                                                                               \
    if (absl::Status mvmm_status_ = (expr); !mvmm_status_.ok()) return mvmm_status_; \
  } while (0)

// `lhs = *expr` for an absl::StatusOr<T> expr; returns its status when not OK.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(MVMM_CONCAT_(mvmm_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = *std::move(tmp)

#endif  // MINIVMM_VMM_CORE_STATUS_MACROS_H_
