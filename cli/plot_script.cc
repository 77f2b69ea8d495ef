#include "cli/plot_script.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "minivmm/exit_stats.h"

namespace minivmm::cli {
namespace {

namespace fs = std::filesystem;

// Runs argv[0] (searched in PATH) and returns its exit status; 127 if it
// could not be started, 128 + signal if it was killed. `quiet` sends its
// output to /dev/null.
int Spawn(const std::vector<std::string>& args, bool quiet = false) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    if (quiet) {
      int null = open("/dev/null", O_WRONLY);
      if (null >= 0) {
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
      }
    }
    execvp(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::string FindPlotScript() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("MINIVMM_PLOT_SCRIPT"); env != nullptr && *env != '\0') {
    return env;  // the user's choice, even if wrong: the error will name it
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path() / ".." / "share" / "minivmm" / "plot_report.py");
    candidates.push_back(exe.parent_path() / "plot_report.py");
  }
  candidates.push_back(fs::path(MINIVMM_SOURCE_DIR) / "bench" / "plot_report.py");
  for (const fs::path& p : candidates) {
    if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return "";
}

int RunPlotScript(const std::string& input, const std::string& output) {
  std::string script = FindPlotScript();
  if (script.empty()) {
    fmt::print(stderr,
               "minivmm: cannot find plot_report.py (set MINIVMM_PLOT_SCRIPT to its path)\n");
    return kPlotFailed;
  }
  std::vector<std::string> pythons;
  if (const char* env = std::getenv("MINIVMM_PYTHON"); env != nullptr && *env != '\0') {
    pythons.push_back(env);
  } else {
    // Debian's interpreter first: python3-matplotlib is installed for it, and
    // a `python3` first on PATH may be a version manager's shim that costs
    // seconds to start (about 10 s on the nested KVM) and has no matplotlib.
    pythons = {"/usr/bin/python3", "python3"};
  }
  // Each Python runs the script itself, which answers kPlotNoMatplotlib
  // (quietly, but for the last) when it cannot import matplotlib: one Python
  // start per try, not a probe and then the script.
  for (size_t i = 0; i < pythons.size(); ++i) {
    // The causes' table labels ("IF set"), from the VMM's one list.
    std::vector<std::string> args = {pythons[i], script, input, "-o", output};
    for (int c = 0; c < static_cast<int>(Cause::kCount); ++c) {
      const auto cause = static_cast<Cause>(c);
      args.push_back("--cause-label");
      args.push_back(std::string(CauseName(cause)) + "=" + std::string(CauseLabel(cause)));
    }
    if (i + 1 < pythons.size()) args.push_back("--quiet-without-matplotlib");
    const int status = Spawn(args);
    if (status == kPlotNoMatplotlib || status == 127) continue;  // not this Python
    return status;
  }
  fmt::print(stderr,
             "minivmm: no Python 3 with matplotlib found (tried {}); install python3-matplotlib "
             "or set MINIVMM_PYTHON\n",
             fmt::join(pythons, ", "));
  return kPlotNoMatplotlib;
}

}  // namespace minivmm::cli
