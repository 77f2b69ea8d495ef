// What --kernel-exits costs the host (VmConfig::kernel_exits, docs/design.md
// "In-kernel exits"): host CPU time per exit, this process's (every thread,
// user and kernel: the vCPU thread, in whose KVM_RUN the kernel writes the
// tracepoint records, and the thread that drains them), with the tracing on
// and off, and each with the exit sites on (--sites: minivmm's own walk of
// the exits that reach it; with the tracing, also the BPF program that walks
// every exit's frames in the kernel), in one run.
//
//   kernel_exits_bench [--repeat N]
//
// Each measurement is the null-hypercall guest run with 20,000 hypercalls
// minus the same guest with 1,000, divided by the exits between them, so
// that start-up (the tracepoints' opening among it) cancels. The four modes
// take turns, each round in the reverse order of the last, so that machine
// drift cancels; the medians are printed with their spread and the ratios
// of tracing on to off, without and with the sites. Exits are minivmm's
// count; with the tracing on, the tracepoint's count of the same exits is
// checked equal to it, and a run that lost a record, or with the sites an
// exit's stack, is an error.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "fmt/format.h"
#include "minivmm/vm.h"

namespace {

struct Sample {
  double cpu_seconds;   // this process's user + system time over Create and Run
  double wall_seconds;  // RunResult::elapsed
  uint64_t exits;       // minivmm's count
};

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

absl::StatusOr<Sample> Run(const std::string& kernel, bool kernel_exits, bool sites) {
  minivmm::VmConfig config;
  config.kernel_path = kernel;
  config.kernel_exits = kernel_exits;
  config.record_sites = sites;
  const double cpu0 = ProcessCpuSeconds();
  auto vm = minivmm::Vm::Create(config);
  if (!vm.ok()) return vm.status();
  auto result = (*vm)->Run();
  if (!result.ok()) return result.status();
  const double cpu = ProcessCpuSeconds() - cpu0;
  if (result->reason != minivmm::StopReason::kGuestShutdown)
    return absl::InternalError(result->detail);
  uint64_t exits = 0;
  for (uint64_t n : result->stats.by_reason) exits += n;
  if (kernel_exits) {
    uint64_t returns = 0, lost = 0;
    for (const minivmm::KernelExitCounts& k : result->kernel_exits) {
      for (const auto& [name, n] : k.returns) returns += n;
      lost += k.lost;
    }
    if (lost != 0) return absl::DataLossError(absl::StrCat(lost, " tracepoint records lost"));
    if (returns != exits)
      return absl::InternalError(
          absl::StrCat("the tracepoint saw ", returns, " returns of KVM_RUN, minivmm ", exits));
    // With the sites, the BPF program's stacks, every one: a host that
    // cannot give them would measure nothing of them.
    if (sites && !result->kernel_exit_stacks)
      return absl::FailedPreconditionError(result->notes.empty() ? "no stacks"
                                                                 : result->notes.back());
    for (const minivmm::KernelExitCounts& k : result->kernel_exits) {
      if (k.unstacked != 0)
        return absl::DataLossError(absl::StrCat(k.unstacked, " exits without their stack"));
    }
  }
  return Sample{cpu, absl::ToDoubleSeconds(result->elapsed), exits};
}

struct Spread {
  double min, median, max;
};
Spread Of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2], v.back()};
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = std::max(1, atoi(argv[++i]));
    } else {
      fmt::print(stderr, "usage: {} [--repeat N]\n", argv[0]);
      return 2;
    }
  }
  // Per exit, for each mode: CPU and wall nanoseconds.
  struct Mode {
    const char* name;
    bool kernel_exits, sites;
  };
  constexpr Mode kModes[] = {{"off", false, false},
                             {"on", true, false},
                             {"off, --sites", false, true},
                             {"on, --sites (stacks)", true, true}};
  constexpr size_t kCount = std::size(kModes);
  std::vector<double> cpu_ns[kCount], wall_ns[kCount];
  uint64_t exits = 0;
  for (int i = 0; i < repeat; ++i) {
    for (size_t k = 0; k < kCount; ++k) {
      const Mode& m = kModes[i % 2 == 0 ? k : kCount - 1 - k];
      auto small = Run(NULL_HYPERCALL_1K_GUEST, m.kernel_exits, m.sites);
      auto large = small.ok() ? Run(NULL_HYPERCALL_20K_GUEST, m.kernel_exits, m.sites) : small;
      if (!large.ok()) {
        fmt::print(stderr, "kernel_exits_bench: {}\n", large.status().ToString());
        return 1;
      }
      exits = large->exits - small->exits;
      const size_t at = &m - kModes;
      cpu_ns[at].push_back((large->cpu_seconds - small->cpu_seconds) * 1e9 / exits);
      wall_ns[at].push_back((large->wall_seconds - small->wall_seconds) * 1e9 / exits);
    }
  }
  fmt::print(
      "host CPU per exit, --kernel-exits off and on, without and with --sites ({} exits "
      "between the two guests, {} runs each; min / median / max)\n",
      exits, repeat);
  auto row = [](const std::string& what, const std::vector<double>& v) {
    const Spread s = Of(v);
    fmt::print("  {:<30} {:>8.0f} {:>8.0f} {:>8.0f} ns\n", what, s.min, s.median, s.max);
  };
  for (size_t m = 0; m < kCount; ++m) row(fmt::format("CPU, {}", kModes[m].name), cpu_ns[m]);
  for (size_t m = 0; m < kCount; ++m) row(fmt::format("wall, {}", kModes[m].name), wall_ns[m]);
  // A ratio whose spreads overlap is no measured difference.
  auto ratio = [&](const char* what, size_t on_mode, size_t off_mode) {
    const Spread on = Of(cpu_ns[on_mode]), off = Of(cpu_ns[off_mode]);
    fmt::print("  {:<30} {:>8.2f}{}\n", what, on.median / off.median,
               on.min <= off.max ? "   (inside the spread)" : "");
  };
  ratio("CPU ratio on / off", 1, 0);
  ratio("CPU ratio on / off, --sites", 3, 2);
  return 0;
}
