// Small helpers shared by the VMM-speed benchmarks in bench/.
#ifndef MINIVMM_BENCH_BENCH_UTIL_H_
#define MINIVMM_BENCH_BENCH_UTIL_H_

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

namespace minivmm::bench {

inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct ChildResult {
  int status = -1;       // exit status, 128 + signal, or -1 if it could not start
  long max_rss_kib = 0;  // peak resident set (getrusage ru_maxrss)
};

// Runs argv (PATH searched) with stdout and stderr sent to /dev/null.
inline ChildResult RunChild(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return {};
  if (pid == 0) {
    FILE* null = fopen("/dev/null", "w");
    if (null != nullptr) {
      dup2(fileno(null), STDOUT_FILENO);
      dup2(fileno(null), STDERR_FILENO);
    }
    execvp(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  while (wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) return {};
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), usage.ru_maxrss};
}

// Whether `program` is in PATH.
inline bool InPath(const std::string& program) {
  std::string path = getenv("PATH") ? getenv("PATH") : "";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string candidate = path.substr(start, end - start) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace minivmm::bench

#endif  // MINIVMM_BENCH_BENCH_UTIL_H_
