// The VMM's own cost per hypercall: the null-hypercall guest
// (tests/tiny_guests/null_hypercalls.S) run through minivmm and through the
// bare KVM_RUN loop in the same process, interleaved (A B B A ...) so that
// machine drift cancels, and reported as a ratio.
//
//   null_hypercall_bench [--repeat N] [--only SIDE]
//
// --only runs one side once (for callgrind: bench/instructions_per_exit.sh):
// bare (the bare KVM_RUN loop), minivmm, minivmm-wasted (with the
// wasted-exit analysis), minivmm-sites (exit sites, RBP 0: the RIP alone),
// minivmm-stacks (exit sites, each walk 31 frames deep) or minivmm-recent
// (each vCPU's last 16 exits kept, VmConfig::recent_exits). Every side but
// minivmm-recent keeps none, whatever the build's default.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "bench/bare_kvm_loop.h"
#include "fmt/format.h"
#include "minivmm/vm.h"
#include "minivmm_abi/hypercall.h"

namespace {

struct Sample {
  double seconds;
  uint64_t exits;
};

absl::StatusOr<Sample> RunMinivmm(const std::string& kernel, bool analyse_waste = false,
                                  bool record_sites = false, uint32_t recent_exits = 0) {
  minivmm::VmConfig config;
  config.kernel_path = kernel;
  config.analyse_waste = analyse_waste;
  config.record_sites = record_sites;
  config.recent_exits = recent_exits;
  auto vm = minivmm::Vm::Create(config);
  if (!vm.ok()) return vm.status();
  auto result = (*vm)->Run();
  if (!result.ok()) return result.status();
  if (result->reason != minivmm::StopReason::kGuestShutdown)
    return absl::InternalError(result->detail);
  uint64_t exits = result->stats.by_reason[static_cast<int>(minivmm::ExitReason::kIo)];
  return Sample{absl::ToDoubleSeconds(result->elapsed), exits};
}

absl::StatusOr<Sample> RunBare(const std::string& kernel) {
  auto run = minivmm::bench::RunBareLoop(kernel);
  if (!run.ok()) return run.status();
  return Sample{run->seconds, run->exits};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
      repeat = std::max(1, atoi(argv[++i]));
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else {
      fmt::print(stderr, "usage: {} [--repeat N] [--only SIDE]\n", argv[0]);
      return 2;
    }
  }
  const std::string kernel = NULL_HYPERCALL_GUEST;
  if (!only.empty()) {
    absl::StatusOr<Sample> s;
    if (only == "bare") {
      s = RunBare(kernel);
    } else if (only == "minivmm" || only == "minivmm-wasted") {
      s = RunMinivmm(kernel, only == "minivmm-wasted");
    } else if (only == "minivmm-sites" || only == "minivmm-stacks") {
      s = RunMinivmm(only == "minivmm-sites" ? kernel : NULL_HYPERCALL_FRAMES_GUEST, false, true);
    } else if (only == "minivmm-recent") {
      s = RunMinivmm(kernel, false, false, minivmm::kDefaultRecentExits);
    } else {
      fmt::print(stderr,
                 "--only: bare, minivmm, minivmm-wasted, minivmm-sites, minivmm-stacks or "
                 "minivmm-recent, not '{}'\n",
                 only);
      return 2;
    }
    if (!s.ok()) {
      fmt::print(stderr, "{}\n", s.status().ToString());
      return 1;
    }
    fmt::print("{} exits in {:.3f} ms\n", s->exits, s->seconds * 1e3);
    return 0;
  }
  std::vector<double> vmm_ns, bare_ns, cr0_ns;
  uint64_t exits = 0;
  for (int i = 0; i < repeat; ++i) {
    // A B B A: each pair runs in both orders.
    for (bool vmm_first : {i % 2 == 0, i % 2 != 0}) {
      auto s = vmm_first ? RunMinivmm(kernel) : RunBare(kernel);
      if (!s.ok()) {
        fmt::print(stderr, "{}\n", s.status().ToString());
        return 1;
      }
      (vmm_first ? vmm_ns : bare_ns).push_back(s->seconds * 1e9 / s->exits);
      exits = s->exits;
    }
    auto cr0 = RunMinivmm(CR0_TOGGLE_GUEST);
    if (!cr0.ok()) {
      fmt::print(stderr, "{}\n", cr0.status().ToString());
      return 1;
    }
    cr0_ns.push_back(cr0->seconds * 1e9 / cr0->exits);
  }
  double vmm = Median(vmm_ns), bare = Median(bare_ns);
  fmt::print("null hypercall round trip ({} exits per run, median of {} runs each)\n", exits,
             repeat);
  fmt::print("  {:<22} {:>10.0f} ns\n", "bare KVM_RUN loop", bare);
  fmt::print("  {:<22} {:>10.0f} ns\n", "minivmm", vmm);
  fmt::print("  {:<22} {:>10.3f}   (target <= 1.03)\n", "ratio minivmm / bare", vmm / bare);
  double cr0 = Median(cr0_ns);
  fmt::print("what an sregs change costs (fpu_taskswitch toggling CR0.TS, minivmm)\n");
  fmt::print("  {:<22} {:>10.0f} ns\n", "CR0-changing hypercall", cr0);
  fmt::print("  {:<22} {:>10.3f}\n", "ratio to null", cr0 / vmm);
  return 0;
}
