// Local early-return helpers: Debian's Abseil (20220623) ships none. Named
// with an HC_ prefix so they cannot collide with a project-wide version.
#ifndef MINIVMM_HYPERCALLS_INTERNAL_STATUS_MACROS_H_
#define MINIVMM_HYPERCALLS_INTERNAL_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define HC_STATUS_CONCAT_INNER_(a, b) a##b
#define HC_STATUS_CONCAT_(a, b) HC_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status) and returns it from the enclosing
// function when it is not OK.
#define HC_RETURN_IF_ERROR(expr)             \
  do {                                       \
    const absl::Status hc_status_ = (expr);  \
    if (!hc_status_.ok()) return hc_status_; \
  } while (0)

// `lhs = value of expr` where expr is an absl::StatusOr<T>; returns its status
// from the enclosing function when it is not OK.
#define HC_ASSIGN_OR_RETURN(lhs, expr) \
  HC_ASSIGN_OR_RETURN_IMPL_(HC_STATUS_CONCAT_(hc_statusor_, __LINE__), lhs, expr)
#define HC_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = *std::move(tmp)

#endif  // MINIVMM_HYPERCALLS_INTERNAL_STATUS_MACROS_H_
