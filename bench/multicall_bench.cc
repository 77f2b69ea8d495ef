// One multicall of N entries against N single hypercalls, N = 1..64
// (VMM benchmark 5 of docs/RESULTS.md), with the multicall_curve tiny guest
// (tests/tiny_guests/multicall_curve.S). The guest asks for each phase
// through a user hypercall that this program registers with the public API
// (Vm::RegisterHypercall); phases are timed on the host between two such
// calls, and exits are counted with an exit observer. Each entry and each
// single call is stack_switch, the call a context switch makes.
//
//   multicall_bench [--reps R] [--repeat K] [--csv FILE]
//
// Exits must be exactly N : 1; timings are reported per operation and as a
// ratio measured in the same run.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "fmt/format.h"
#include "minivmm/vm.h"

namespace {

using minivmm::bench::Median;

constexpr uint32_t kBenchNext = 64;  // MVMM_HC_USER_FIRST
constexpr int kMaxN = 64;

struct Phase {
  int n;
  bool multicall;
  int reps;
  absl::Duration time;
  uint64_t exits = 0;
};

struct Options {
  int reps = 20;
  int repeat = 3;
  std::string csv_path;
};

std::optional<Options> ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      o.reps = std::clamp(atoi(argv[++i]), 1, 65535);
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
      o.repeat = std::max(1, atoi(argv[++i]));
    else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
      o.csv_path = argv[++i];
    else
      return std::nullopt;
  }
  return o;
}

// Every N, `repeat` times, in both modes, alternating their order from one
// N to the next (A B B A).
std::vector<Phase> PlanPhases(const Options& o) {
  std::vector<Phase> phases;
  for (int k = 0; k < o.repeat; ++k) {
    for (int n = 1; n <= kMaxN; ++n) {
      bool multicall_first = (n + k) % 2 == 0;
      phases.push_back({n, multicall_first, o.reps, {}});
      phases.push_back({n, !multicall_first, o.reps, {}});
    }
  }
  return phases;
}

// Runs the guest through every phase, timing each and counting its exits.
// Returns the exit status for main: 0 when every phase ran.
int RunPhases(std::vector<Phase>& phases) {
  minivmm::VmConfig config;
  config.kernel_path = MULTICALL_GUEST;
  auto vm = minivmm::Vm::Create(config);
  if (!vm.ok()) {
    fmt::print(stderr, "multicall_bench: {}\n", std::string(vm.status().message()));
    return 125;
  }
  uint64_t exits = 0;
  (*vm)->SetExitObserver([&exits](const minivmm::ExitEvent&) { ++exits; });
  size_t next = 0;
  absl::Time started;
  uint64_t exits_at_start = 0;
  absl::Status registered = (*vm)->RegisterHypercall(
      kBenchNext, "bench_next",
      [&](minivmm::HypercallEnv&, const minivmm::HypercallArgs&) -> absl::StatusOr<uint64_t> {
        absl::Time now = absl::Now();
        if (next > 0) {
          phases[next - 1].time = now - started;
          // The observer runs after the exit, so this bench_next is not counted yet.
          phases[next - 1].exits = exits - exits_at_start - 1;
        }
        started = now;
        exits_at_start = exits;
        if (next == phases.size()) return 0;
        const Phase& p = phases[next++];
        return static_cast<uint64_t>(p.n) | static_cast<uint64_t>(p.reps) << 16 |
               static_cast<uint64_t>(p.multicall) << 32;
      });
  if (!registered.ok()) {
    fmt::print(stderr, "multicall_bench: {}\n", std::string(registered.message()));
    return 125;
  }
  auto result = (*vm)->Run();
  if (!result.ok() || result->reason != minivmm::StopReason::kGuestShutdown ||
      next != phases.size()) {
    fmt::print(stderr, "multicall_bench: the guest did not finish: {}\n",
               result.ok() ? result->detail : std::string(result.status().message()));
    return 1;
  }
  return 0;
}

// The table (and the CSV file, if asked for); returns whether the exits
// were exactly N : 1 for every N.
bool Report(const Options& o, const std::vector<Phase>& phases) {
  fmt::print("multicall of N stack_switch entries vs N single stack_switch hypercalls\n");
  fmt::print("{} reps per phase, median of {} phases; times per N operations, host clock\n\n",
             o.reps, o.repeat);
  fmt::print("{:>3}  {:>12}  {:>12}  {:>6}  {:>12}  {:>12}  {:>7}\n", "N", "exits single",
             "exits multi", "ratio", "us single", "us multi", "speedup");
  std::ofstream csv;
  if (!o.csv_path.empty()) {
    csv.open(o.csv_path);
    csv << "n,exits_single,exits_multicall,us_single,us_multicall\n";
  }
  bool exact = true;
  for (int n = 1; n <= kMaxN; ++n) {
    std::vector<double> single_us, multi_us;
    uint64_t single_exits = 0, multi_exits = 0;
    for (const Phase& p : phases) {
      if (p.n != n) continue;
      double us = absl::ToDoubleMicroseconds(p.time) / p.reps;
      (p.multicall ? multi_us : single_us).push_back(us);
      uint64_t per_rep = p.exits / p.reps;
      if (p.exits % p.reps != 0 || per_rep != (p.multicall ? 1u : static_cast<uint64_t>(n)))
        exact = false;
      (p.multicall ? multi_exits : single_exits) = per_rep;
    }
    double s = Median(single_us), m = Median(multi_us);
    if (n <= 8 || n % 8 == 0) {
      fmt::print("{:>3}  {:>12}  {:>12}  {:>5}:1  {:>12.1f}  {:>12.1f}  {:>6.1f}x\n", n,
                 single_exits, multi_exits, multi_exits ? single_exits / multi_exits : 0, s, m,
                 s / m);
    }
    if (csv.is_open())
      csv << fmt::format("{},{},{},{:.3f},{:.3f}\n", n, single_exits, multi_exits, s, m);
  }
  fmt::print("\nexits exactly N:1 for every N = 1..{}: {}\n", kMaxN, exact ? "yes" : "NO");
  return exact;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Options> o = ParseOptions(argc, argv);
  if (!o) {
    fmt::print(stderr, "usage: multicall_bench [--reps R] [--repeat K] [--csv FILE]\n");
    return 2;
  }
  std::vector<Phase> phases = PlanPhases(*o);
  if (const int status = RunPhases(phases); status != 0) return status;
  return Report(*o, phases) ? 0 : 1;
}
