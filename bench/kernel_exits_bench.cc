// What --kernel-exits costs the host (VmConfig::kernel_exits, docs/design.md
// "In-kernel exits"): host CPU time per exit, this process's (every thread,
// user and kernel: the vCPU thread, in whose KVM_RUN the kernel writes the
// tracepoint records, and the thread that drains them), with the tracing on
// and off, in one run.
//
//   kernel_exits_bench [--repeat N]
//
// Each measurement is the null-hypercall guest run with 20,000 hypercalls
// minus the same guest with 1,000, divided by the exits between them, so
// that start-up (the tracepoints' opening among it) cancels. Off and on
// alternate (A B B A ...) so that machine drift cancels; the medians are
// printed with their spread and the ratio. Exits are minivmm's count; with
// the tracing on, the tracepoint's count of the same exits is checked equal
// to it, and a run that lost a record is an error.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
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

absl::StatusOr<Sample> Run(const std::string& kernel, bool kernel_exits) {
  minivmm::VmConfig config;
  config.kernel_path = kernel;
  config.kernel_exits = kernel_exits;
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
  // Per exit, for off (0) and on (1): CPU and wall nanoseconds.
  std::vector<double> cpu_ns[2], wall_ns[2];
  uint64_t exits = 0;
  for (int i = 0; i < repeat; ++i) {
    for (bool on : {i % 2 != 0, i % 2 == 0}) {
      auto small = Run(NULL_HYPERCALL_1K_GUEST, on);
      auto large = small.ok() ? Run(NULL_HYPERCALL_20K_GUEST, on) : small;
      if (!large.ok()) {
        fmt::print(stderr, "kernel_exits_bench: {}\n", large.status().ToString());
        return 1;
      }
      exits = large->exits - small->exits;
      cpu_ns[on].push_back((large->cpu_seconds - small->cpu_seconds) * 1e9 / exits);
      wall_ns[on].push_back((large->wall_seconds - small->wall_seconds) * 1e9 / exits);
    }
  }
  fmt::print(
      "host CPU per exit, --kernel-exits off and on ({} exits between the two guests, "
      "{} runs each; min / median / max)\n",
      exits, repeat);
  auto row = [](const char* what, const std::vector<double>& v) {
    const Spread s = Of(v);
    fmt::print("  {:<26} {:>8.0f} {:>8.0f} {:>8.0f} ns\n", what, s.min, s.median, s.max);
  };
  row("CPU, off", cpu_ns[0]);
  row("CPU, on", cpu_ns[1]);
  row("wall, off", wall_ns[0]);
  row("wall, on", wall_ns[1]);
  const Spread off = Of(cpu_ns[0]), on = Of(cpu_ns[1]);
  // A ratio whose spreads overlap is no measured difference.
  fmt::print("  {:<26} {:>8.2f}{}\n", "CPU ratio on / off", on.median / off.median,
             on.min <= off.max ? "   (inside the spread)" : "");
  return 0;
}
