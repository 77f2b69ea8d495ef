// How fast minivmm starts (VMM benchmark 3 of docs/RESULTS.md): VM creation to the
// first guest instruction, in this process through the public API, and a
// whole `minivmm run --workload none` as a separate process; side by side
// with QEMU booting the same guest image (PVH entry, backend=native) when
// qemu-system-x86_64 is installed. Target: at most 5 ms.
//
//   startup_bench [--repeat N]
//
// "First guest instruction" is measured at the first exit of the
// null-hypercall tiny guest, whose fourth instruction is an `out`: that
// includes one exit round trip and three emulated instructions (~10 us
// here), an upper bound of the start-up cost.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "vmm/vm.h"

namespace {

using minivmm::bench::Median;
using minivmm::bench::RunChild;

constexpr double kTargetMs = 5.0;

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

std::string Verdict(double ms) { return ms <= kTargetMs ? "meets" : "misses"; }

}  // namespace

int main(int argc, char** argv) {
  int repeat = 20;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
      repeat = std::max(1, atoi(argv[++i]));
    else {
      fmt::print(stderr, "usage: startup_bench [--repeat N]\n");
      return 2;
    }
  }
  fmt::print("minivmm start-up, median of {} (target <= {} ms)\n\n", repeat, kTargetMs);

  std::vector<double> create, first;
  for (int i = 0; i < repeat; ++i) {
    auto m = MeasureFirstExit();
    if (!m.ok()) {
      fmt::print(stderr, "startup_bench: {}\n", std::string(m.status().message()));
      return 125;
    }
    create.push_back(m->create_ms);
    first.push_back(m->first_exit_ms);
  }
  fmt::print("{:<52} {:>8.3f} ms\n", "Vm::Create (KVM VM, vCPU, RAM, ELF, boot structures)",
             Median(create));
  fmt::print("{:<52} {:>8.3f} ms  {} the target\n", "Vm::Create to the first guest exit",
             Median(first), Verdict(Median(first)));

  // The whole command, as a user runs it; its own record says how long the
  // guest itself ran, so the VMM's share can be told apart.
  std::string json_path = fmt::format("/tmp/startup_bench_{}.json", getpid());
  std::vector<double> whole, guest;
  for (int i = 0; i < repeat; ++i) {
    absl::Time t0 = absl::Now();
    auto child = RunChild({MINIVMM_BIN, "run", "-q", "--workload", "none", "--json", json_path});
    double ms = absl::ToDoubleMilliseconds(absl::Now() - t0);
    if (child.status != 0) {
      fmt::print(stderr, "startup_bench: minivmm run exited with {}\n", child.status);
      return 1;
    }
    std::ifstream in(json_path);
    nlohmann::json record = nlohmann::json::parse(in, nullptr, false);
    whole.push_back(ms);
    if (!record.is_discarded()) guest.push_back(record["result"]["elapsed_ns"].get<double>() / 1e6);
  }
  unlink(json_path.c_str());
  double w = Median(whole), g = Median(guest);
  fmt::print("{:<52} {:>8.3f} ms  {} the target\n", "minivmm run --workload none (whole process)",
             w, Verdict(w));
  fmt::print("{:<52} {:>8.3f} ms\n", "  of which the guest ran (Vm::Run)", g);
  fmt::print("{:<52} {:>8.3f} ms  {} the target\n",
             "  of which the rest (exec, create, record, exit)", w - g, Verdict(w - g));

  if (!minivmm::bench::InPath("qemu-system-x86_64")) {
    fmt::print("\nqemu-system-x86_64 is not installed: no side-by-side comparison\n");
    return 0;
  }
  std::vector<double> qemu;
  int qemu_status = 0;
  for (int i = 0; i < repeat; ++i) {
    absl::Time t0 = absl::Now();
    auto child = RunChild({"qemu-system-x86_64", "-accel", "kvm", "-kernel", GUEST_ELF, "-append",
                           "backend=native workload=none", "-m", "64M", "-nographic", "-no-reboot",
                           "-nodefaults", "-serial", "null", "-device",
                           "isa-debug-exit,iobase=0xf4,iosize=4"});
    qemu.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
    qemu_status = child.status;
  }
  // The guest's shutdown(0) is debug-exit value 0: QEMU exits with (0 << 1) | 1.
  fmt::print("{:<52} {:>8.3f} ms  (exit status {}{})\n",
             "qemu-system-x86_64 -accel kvm, same guest, native", Median(qemu), qemu_status,
             qemu_status == 1 ? ", guest succeeded" : ", unexpected");
  fmt::print("{:<52} {:>8.1f}x\n", "QEMU / minivmm, whole process", Median(qemu) / w);
  return 0;
}
