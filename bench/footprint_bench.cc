// The VMM's resident memory beyond guest RAM (VMM benchmark 4 of docs/RESULTS.md):
// target at most 4 MiB. In this process: the resident set after booting the
// built-in guest (workload=none) minus the guest RAM pages that are resident
// (the guest RAM mapping's Rss in /proc/self/smaps), and what creating and
// running the VM added to the process. For the `minivmm run` command: its
// peak resident set (getrusage) minus the same guest pages.
//
//   footprint_bench [--memory MiB]
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "bench/bench_util.h"
#include "fmt/format.h"
#include "minivmm/vm.h"

namespace {

constexpr double kTargetMiB = 4.0;

// "VmRSS:" or "VmHWM:" of /proc/self/status, in KiB.
long StatusKib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(field.size()));
  }
  return -1;
}

// The Rss of the mapping of exactly `bytes` (guest RAM), in KiB.
long GuestRamRssKib(uint64_t bytes) {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool in_ram = false;
  long rss = -1;
  while (std::getline(in, line)) {
    uint64_t start, end;
    if (sscanf(line.c_str(), "%lx-%lx ", &start, &end) == 2 && line.find(':') > line.find(' ')) {
      in_ram = end - start == bytes;
      continue;
    }
    if (in_ram && line.rfind("Rss:", 0) == 0) rss = std::max(rss, 0L) + std::stol(line.substr(4));
  }
  return rss;
}

double MiB(long kib) { return kib / 1024.0; }

}  // namespace

int main(int argc, char** argv) {
  uint64_t memory_mib = 64;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--memory") && i + 1 < argc)
      memory_mib = strtoull(argv[++i], nullptr, 10);
    else {
      fmt::print(stderr, "usage: footprint_bench [--memory MiB]\n");
      return 2;
    }
  }
  long before = StatusKib("VmRSS:");
  minivmm::VmConfig config;
  config.memory_bytes = memory_mib << 20;
  config.cmdline = "workload=none";
  auto vm = minivmm::Vm::Create(config);
  if (!vm.ok()) {
    fmt::print(stderr, "footprint_bench: {}\n", std::string(vm.status().message()));
    return 125;
  }
  auto result = (*vm)->Run();
  if (!result.ok() || result->reason != minivmm::StopReason::kGuestShutdown) {
    fmt::print(stderr, "footprint_bench: the guest did not shut down\n");
    return 1;
  }
  long after = StatusKib("VmRSS:");
  long guest = GuestRamRssKib(config.memory_bytes);
  if (guest < 0) {
    fmt::print(stderr, "footprint_bench: no {} MiB mapping in /proc/self/smaps\n", memory_mib);
    return 1;
  }
  long beyond = after - guest;
  fmt::print("resident memory, {} MiB guest, workload=none (target <= {} MiB beyond guest RAM)\n\n",
             memory_mib, kTargetMiB);
  fmt::print("{:<50} {:>8.2f} MiB\n", "this process before Vm::Create (code, libraries)",
             MiB(before));
  fmt::print("{:<50} {:>8.2f} MiB\n", "after Vm::Create and Run", MiB(after));
  fmt::print("{:<50} {:>8.2f} MiB\n", "  of which guest RAM pages resident", MiB(guest));
  fmt::print("{:<50} {:>8.2f} MiB  {} the target\n", "  beyond guest RAM (whole process)",
             MiB(beyond), MiB(beyond) <= kTargetMiB ? "meets" : "misses");
  fmt::print("{:<50} {:>8.2f} MiB\n", "  added by the VM itself, beyond guest RAM",
             MiB(after - before - guest));

  auto child = minivmm::bench::RunChild(
      {MINIVMM_BIN, "run", "-q", "--workload", "none", "--memory", fmt::format("{}M", memory_mib)});
  if (child.status == 0) {
    long cli_beyond = child.max_rss_kib - guest;
    fmt::print("{:<50} {:>8.2f} MiB\n", "minivmm run: peak resident set", MiB(child.max_rss_kib));
    fmt::print("{:<50} {:>8.2f} MiB  {} the target\n", "minivmm run: beyond guest RAM",
               MiB(cli_beyond), MiB(cli_beyond) <= kTargetMiB ? "meets" : "misses");
  }
  return 0;
}
