// Shutdown paths and kernel assertions. Shutdown codes (guest/README.md,
// MVMM_SHUTDOWN_* in minivmm_abi/boot.h): 0 success, 1 a self-check failed,
// 2 bad command line, 3 unhandled exception, 4 kernel assertion or panic.
#ifndef GUEST_KERNEL_PANIC_H_
#define GUEST_KERNEL_PANIC_H_

#include "lib/format.h"
#include "minivmm_abi/boot.h"

namespace guest {

enum ShutdownCode : int {
  kExitOk = MVMM_SHUTDOWN_OK,
  kExitCheckFailed = MVMM_SHUTDOWN_CHECK_FAILED,
  kExitBadCmdline = MVMM_SHUTDOWN_BAD_CMDLINE,
  kExitException = MVMM_SHUTDOWN_EXCEPTION,
  kExitAssert = MVMM_SHUTDOWN_ASSERT,
};

// Sends the final kernel.* report (once) and powers off with `code`: under
// minivmm with sched_op(shutdown), elsewhere through the debug-exit port.
[[noreturn]] void Shutdown(int code);
// Prints "guest: <msg>" as one console line, then Shutdown(code).
[[noreturn]] void Fatal(int code, StrView msg);
// Fatal(kExitAssert, "panic: <msg>").
[[noreturn]] void Panic(StrView msg);
[[noreturn]] void AssertFailed(const char* expr, const char* file, int line);

}  // namespace guest

#define GUEST_ASSERT(cond)                                         \
  do {                                                             \
    if (!(cond)) ::guest::AssertFailed(#cond, __FILE__, __LINE__); \
  } while (0)

#endif  // GUEST_KERNEL_PANIC_H_
