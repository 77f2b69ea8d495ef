// What a builtin hypercall handler returns: the value for the guest's RAX, or
// a refusal with its errno and a reason. Two words, returned in registers: no
// allocation, no formatting, no absl::Status on the path of a successful or
// refused call. The reason is static text; the dispatcher passes it to the
// exit observer (--trace) and turns the first refusal of each kind into a
// note of the run.
#ifndef MINIVMM_HYPERCALLS_HYPERCALL_RESULT_H_
#define MINIVMM_HYPERCALLS_HYPERCALL_RESULT_H_

#include <cstdint>

namespace minivmm {

struct HypercallResult {
  int64_t value;                  // >= 0: the result; < 0: -errno
  const char* refusal = nullptr;  // static text when value < 0, else null

  bool ok() const { return value >= 0; }
};

// A successful call returning `value`. Builtins return counts and flags,
// never above INT64_MAX (an embedder's handler is checked by the dispatcher).
constexpr HypercallResult Done(uint64_t value) { return {static_cast<int64_t>(value), nullptr}; }

// A refused call: the guest gets -`error` (an MVMM_E* value from
// minivmm_abi/hypercall.h); `why` must be a string literal.
constexpr HypercallResult Refuse(int error, const char* why) { return {-error, why}; }

}  // namespace minivmm

#endif  // MINIVMM_HYPERCALLS_HYPERCALL_RESULT_H_
