// How fast minivmm starts (VMM benchmark 3 of docs/RESULTS.md).
//
//   startup_bench [--repeat N] [--minivmm PATH] [--no-qemu]
//
// --minivmm times another minivmm binary in 3b (default: this build's);
// --no-qemu skips 3c (QEMU takes ~4 s a run here).
//
// 3a. VM creation to the first guest instruction, in this process through
//     the public API. Target: at most 5 ms. "First guest instruction" is
//     measured at the first exit of the null-hypercall tiny guest, whose
//     fourth instruction is an `out`: that includes one exit round trip and
//     three emulated instructions (~10 us here), an upper bound of the
//     start-up cost.
//
// 3b. Whole-process start-up, side by side in one run, interleaved A B B A:
//     A = bare_first_exit (bench/bare_first_exit.c): a C program that opens
//         /dev/kvm, creates a VM with 64 MiB of RAM (minivmm's default),
//         one vCPU, and runs a two-instruction blob to its first exit. Its
//         guest runs one instruction, so its whole wall time counts as
//         outside the guest.
//     B = `minivmm run --workload none`, exactly as a user types it. Outside
//         the guest = its whole wall time minus the time its guest ran, which
//         is RunResult::elapsed (Vm::Run's wall clock, from just before the
//         first KVM_RUN to just after the exit that stopped the run; the run
//         record's result.elapsed_ns), read from the summary line the command
//         prints on stderr ("minivmm: guest shutdown (...), 0.058 s", whose
//         resolution is 1 ms; the median over N runs of jittering guest times
//         averages the rounding out).
//     Whole wall time is spawn (posix_spawn) to wait4 for both, with stdout
//     sent to /dev/null. Target: B's outside-the-guest time at most 3.0x A's
//     (medians of N).
//     C = the same command with --json FILE, which adds the record and the
//     host probe, read from the probe cache (docs/run-record.md "The host
//     probe and its cache": a cache of this benchmark's own, measured once
//     before the timed runs). Target: C at most 1.5x B (medians of N).
//
// 3c. QEMU booting the same guest image (PVH entry, backend=native), when
//     qemu-system-x86_64 is installed.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "fmt/format.h"
#include "minivmm/vm.h"

extern char** environ;

namespace {

using minivmm::bench::Median;

constexpr double kTargetMs = 5.0;         // 3a
constexpr double kTargetRatio = 3.0;      // 3b: B outside the guest / A
constexpr double kTargetJsonRatio = 1.5;  // 3b: C / B (the cached probe)

struct FirstExit {
  double create_ms;      // Vm::Create
  double first_exit_ms;  // Vm::Create start to the first exit
};

absl::StatusOr<FirstExit> MeasureFirstExit() {
  minivmm::VmConfig config;
  config.kernel_path = NULL_HYPERCALL_GUEST;
  absl::Time t0 = absl::Now();
  auto vm = minivmm::Vm::Create(config);
  if (!vm.ok()) return vm.status();
  absl::Time created = absl::Now();
  absl::Time first;
  bool seen = false;
  minivmm::Vm* raw = vm->get();
  raw->SetExitObserver([&](const minivmm::ExitEvent&) {
    if (seen) return;
    first = absl::Now();
    seen = true;
    raw->RequestStop();
  });
  auto result = raw->Run();
  if (!result.ok()) return result.status();
  if (!seen) return absl::InternalError("the guest never exited");
  return FirstExit{absl::ToDoubleMilliseconds(created - t0),
                   absl::ToDoubleMilliseconds(first - t0)};
}

std::string Verdict(bool met) { return met ? "meets" : "misses"; }

struct Timed {
  int status = -1;  // exit status, 128 + signal, or -1 if it could not start
  double ms = 0;    // spawn to wait4
};

// Runs argv (PATH searched) as a whole process, stdout to /dev/null and
// stderr to `stderr_path` (or /dev/null), and times it from spawn to wait4.
Timed TimeProcess(const std::vector<std::string>& args, const std::string& stderr_path = "") {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO,
                                   stderr_path.empty() ? "/dev/null" : stderr_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Timed out;
  absl::Time t0 = absl::Now();
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return out;
  int status = 0;
  struct rusage usage {};
  while (wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) return out;
  }
  out.ms = absl::ToDoubleMilliseconds(absl::Now() - t0);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

// The guest's run time from minivmm run's summary line on stderr,
// "minivmm: <stop reason> (<detail>), <seconds> s" (cli/exit_table.cc).
std::optional<double> GuestMsFromSummary(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("minivmm: ", 0) != 0 || line.size() < 2 ||
        line.compare(line.size() - 2, 2, " s") != 0)
      continue;
    size_t comma = line.rfind(", ");
    if (comma == std::string::npos) continue;
    char* end = nullptr;
    std::string number = line.substr(comma + 2, line.size() - 2 - (comma + 2));
    double seconds = strtod(number.c_str(), &end);
    if (end == number.c_str() || *end != '\0') continue;
    return seconds * 1e3;
  }
  return std::nullopt;
}

struct Options {
  int repeat = 20;
  std::string minivmm = MINIVMM_BIN;
  bool qemu = true;
};

std::optional<Options> ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
      o.repeat = std::max(1, atoi(argv[++i]));
    else if (!strcmp(argv[i], "--minivmm") && i + 1 < argc)
      o.minivmm = argv[++i];
    else if (!strcmp(argv[i], "--no-qemu"))
      o.qemu = false;
    else
      return std::nullopt;
  }
  return o;
}

// 3a. Returns false (after saying why) when a run failed.
bool InProcess(int repeat) {
  std::vector<double> create, first;
  for (int i = 0; i < repeat; ++i) {
    auto m = MeasureFirstExit();
    if (!m.ok()) {
      fmt::print(stderr, "startup_bench: {}\n", std::string(m.status().message()));
      return false;
    }
    create.push_back(m->create_ms);
    first.push_back(m->first_exit_ms);
  }
  fmt::print("3a. in this process (target <= {} ms)\n", kTargetMs);
  fmt::print("{:<56} {:>8.3f} ms\n", "  Vm::Create (KVM VM, vCPU, RAM, ELF, boot structures)",
             Median(create));
  fmt::print("{:<56} {:>8.3f} ms  {} the target\n", "  Vm::Create to the first guest exit",
             Median(first), Verdict(Median(first) <= kTargetMs));
  return true;
}

// 3b's timings, in ms, one entry per run.
struct WholeProcess {
  std::vector<double> bare, whole, guest, outside;  // A; B, its guest time, B - guest
  std::vector<double> with_json;                    // C (empty if its warm-up run failed)
};

// A and B, A B B A: neither side always runs right after the other.
bool TimeSideBySide(const Options& o, WholeProcess& w) {
  std::string stderr_path = fmt::format("/tmp/startup_bench_{}.stderr", getpid());
  // The same guest RAM as minivmm run's default.
  const std::vector<std::string> bare = {BARE_FIRST_EXIT_BIN,
                                         std::to_string(minivmm::VmConfig().memory_bytes)};
  const std::vector<std::string> run = {o.minivmm, "run", "--workload", "none"};
  auto time_bare = [&]() {
    Timed t = TimeProcess(bare);
    if (t.status != 0) {
      fmt::print(stderr, "startup_bench: bare_first_exit exited with {}\n", t.status);
      return false;
    }
    w.bare.push_back(t.ms);
    return true;
  };
  auto time_minivmm = [&]() {
    Timed t = TimeProcess(run, stderr_path);
    std::optional<double> guest = GuestMsFromSummary(stderr_path);
    if (t.status != 0 || !guest) {
      fmt::print(stderr, "startup_bench: minivmm run exited with {}{}\n", t.status,
                 guest ? "" : " and printed no summary line");
      return false;
    }
    w.whole.push_back(t.ms);
    w.guest.push_back(*guest);
    w.outside.push_back(t.ms - *guest);
    return true;
  };
  bool ok = true;
  for (int i = 0; ok && i < o.repeat; ++i)
    ok = i % 2 == 0 ? time_bare() && time_minivmm() : time_minivmm() && time_bare();
  unlink(stderr_path.c_str());
  return ok;
}

// C: B with --json FILE, the host probe from a cache of its own, filled by
// one untimed run.
void TimeWithJson(const Options& o, WholeProcess& w) {
  std::string json_path = fmt::format("/tmp/startup_bench_{}.json", getpid());
  std::string cache_dir = fmt::format("/tmp/startup_bench_cache_{}", getpid());
  setenv("MINIVMM_CACHE_DIR", cache_dir.c_str(), 1);
  const std::vector<std::string> json_args = {o.minivmm, "run",    "--workload",
                                              "none",    "--json", json_path};
  const bool warmed = TimeProcess(json_args).status == 0;
  for (int i = 0; warmed && i < o.repeat; ++i) {
    Timed t = TimeProcess(json_args);
    if (t.status == 0) w.with_json.push_back(t.ms);
  }
  unlink(json_path.c_str());
  std::filesystem::remove_all(cache_dir);
}

// Medians decide; minima (the runs least disturbed by other load on the
// machine) are shown beside them.
void PrintWholeProcess(const WholeProcess& w) {
  auto row = [](const char* what, const std::vector<double>& v, const char* note = "") {
    fmt::print("{:<50} {:>9.3f} {:>9.3f} ms{}\n", what, Median(v),
               *std::min_element(v.begin(), v.end()), note);
  };
  double ratio = Median(w.outside) / Median(w.bare);
  double min_ratio = *std::min_element(w.outside.begin(), w.outside.end()) /
                     *std::min_element(w.bare.begin(), w.bare.end());
  fmt::print(
      "\n3b. whole process, spawn to wait, A B B A (target: B outside the guest <= {:.1f}x A)\n",
      kTargetRatio);
  fmt::print("{:<50} {:>9} {:>9}\n", "", "median", "min");
  row("  A. bare_first_exit (all outside the guest)", w.bare);
  row("  B. minivmm run --workload none", w.whole);
  row("     of which the guest ran (RunResult::elapsed)", w.guest);
  row("     outside the guest (whole - guest, per run)", w.outside);
  fmt::print("{:<50} {:>8.2f}x {:>8.2f}x  target <= {:.1f}x: {} it\n", "  B outside the guest / A",
             ratio, min_ratio, kTargetRatio, ratio <= kTargetRatio ? "meets" : "misses");
  if (!w.with_json.empty()) {
    row("  C. minivmm run --workload none --json FILE", w.with_json,
        "  (+ record, cached host probe)");
    const double json_ratio = Median(w.with_json) / Median(w.whole);
    fmt::print("{:<50} {:>8.2f}x {:>9}  target <= {:.1f}x: {} it\n", "  C / B", json_ratio, "",
               kTargetJsonRatio, json_ratio <= kTargetJsonRatio ? "meets" : "misses");
  } else {
    fmt::print("  C. minivmm run --workload none --json FILE failed: no ratio\n");
  }
}

// 3c, beside B's whole-process median.
void Qemu(int repeat, double minivmm_ms) {
  if (!minivmm::bench::InPath("qemu-system-x86_64")) {
    fmt::print("\nqemu-system-x86_64 is not installed: no side-by-side comparison\n");
    return;
  }
  std::vector<double> qemu;
  int qemu_status = 0;
  for (int i = 0; i < repeat; ++i) {
    Timed t = TimeProcess({"qemu-system-x86_64", "-accel", "kvm", "-kernel", GUEST_ELF, "-append",
                           "backend=native workload=none", "-m", "64M", "-nographic", "-no-reboot",
                           "-nodefaults", "-serial", "null", "-device",
                           "isa-debug-exit,iobase=0xf4,iosize=4"});
    qemu.push_back(t.ms);
    qemu_status = t.status;
  }
  // The guest's shutdown(0) is debug-exit value 0: QEMU exits with (0 << 1) | 1.
  fmt::print("\n3c. QEMU\n");
  fmt::print("{:<56} {:>8.3f} ms  (exit status {}{})\n",
             "  qemu-system-x86_64 -accel kvm, same guest, native", Median(qemu), qemu_status,
             qemu_status == 1 ? ", guest succeeded" : ", unexpected");
  fmt::print("{:<56} {:>8.1f}x\n", "  QEMU / minivmm run, whole process",
             Median(qemu) / minivmm_ms);
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Options> o = ParseOptions(argc, argv);
  if (!o) {
    fmt::print(stderr, "usage: startup_bench [--repeat N] [--minivmm PATH] [--no-qemu]\n");
    return 2;
  }
  fmt::print("minivmm start-up, median of {}\n\n", o->repeat);
  if (!InProcess(o->repeat)) return 125;
  WholeProcess w;
  if (!TimeSideBySide(*o, w)) return 1;
  TimeWithJson(*o, w);
  PrintWholeProcess(w);
  if (o->qemu) Qemu(o->repeat, Median(w.whole));
  return 0;
}
