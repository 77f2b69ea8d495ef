// Running a command line from a test and reading its exit status and output.
#ifndef MINIVMM_TESTS_COMMON_COMMAND_H_
#define MINIVMM_TESTS_COMMON_COMMAND_H_

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace minivmm::testing {

inline bool HaveKvmDevice() { return access("/dev/kvm", R_OK | W_OK) == 0; }

// A whole-VM test never passes by being skipped: without a KVM it fails.
// Where the host has none, scripts/quickstart.sh test runs these tests (ctest
// label `vm`) on a nested kvm_amd instead (scripts/nestkvm).
#define REQUIRE_KVM()                                                                     \
  if (!::minivmm::testing::HaveKvmDevice())                                               \
  GTEST_FAIL() << "no usable /dev/kvm: whole-VM tests need a KVM (scripts/quickstart.sh " \
                  "test runs them on a nested kvm_amd where the host has none)"

// How many times a heavy test repeats what it does: `host_count` on the
// host's KVM. On the nested kvm_amd (scripts/nestkvm sets MINIVMM_NESTED),
// where every exit costs ~10x, the positive number in `$var` if set
// (scripts/quickstart.sh sets the ones its tests read), else `host_count`.
inline int NestedCount(const char* var, int host_count) {
  const char* nested = std::getenv("MINIVMM_NESTED");
  const char* count = std::getenv(var);
  if (nested == nullptr || *nested == '\0' || count == nullptr) return host_count;
  char* end = nullptr;
  const long n = std::strtol(count, &end, 10);
  return end != count && *end == '\0' && n > 0 && n <= 1000000 ? static_cast<int>(n) : host_count;
}

struct Outcome {
  int status;       // exit status, or 128 + signal
  std::string out;  // stdout and stderr together
};

// Runs `command` through the shell with stderr folded into stdout.
inline Outcome Shell(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  Outcome o{-1, ""};
  if (pipe == nullptr) return o;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) o.out.append(buffer.data(), n);
  int raw = pclose(pipe);
  o.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  return o;
}

#ifdef MINIVMM_BIN
// Runs the built minivmm command with `args` (passed through the shell).
inline Outcome Minivmm(const std::string& args) {
  return Shell(std::string(MINIVMM_BIN) + " " + args);
}
#endif

}  // namespace minivmm::testing

#endif  // MINIVMM_TESTS_COMMON_COMMAND_H_
