// Running QEMU or minivmm from the agreement tests: a command's status and
// its console, stdout and stderr together.
#ifndef MINIVMM_TESTS_QEMU_QEMU_RUN_H_
#define MINIVMM_TESTS_QEMU_QEMU_RUN_H_

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace minivmm::testing {

struct Output {
  int status = -1;  // the exit status, or -1 when the command did not exit
  std::string text;
};

// Runs `command` with /bin/sh, stdout and stderr together, under coreutils
// timeout so a hung guest cannot hang the test.
inline Output RunCommand(const std::string& command, int timeout_s) {
  Output out;
  const std::string full = "timeout " + std::to_string(timeout_s) + " " + command + " 2>&1";
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.text.append(buf, n);
  const int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status)) out.status = WEXITSTATUS(status);
  return out;
}

// The lines of a console, without their '\n' or a '\r' before it.
inline std::vector<std::string> ConsoleLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

// `s` as one shell word (no single quotes inside: the tests' own paths).
inline std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

}  // namespace minivmm::testing

#endif  // MINIVMM_TESTS_QEMU_QEMU_RUN_H_
