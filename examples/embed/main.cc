// Embeds minivmm in a program of its own: registers a custom hypercall and a
// custom port-I/O device, boots the built-in guest with `workload=custom`,
// checks what the guest reports against what the host saw, and prints the
// exit statistics. See docs/API.md.
//
//   minivmm_embed [N [CPUS]] N = hypercalls and port writes the guest makes
//                            (1-255, default 3); CPUS = vCPUs (1-32,
//                            default 1): the guest's work runs on vCPU 0,
//                            the others come up and idle
//
// The guest's side of workload=custom: for i = 1..N it calls hypercall 64
// with (RDI = i, RSI = 10 * i) and adds up the results, and writes the byte i
// to port 0x520; then it reads one byte from port 0x520 and reports
// custom.calls=N, custom.sum=<sum>, custom.port_read=<byte>.
//
// Exit status: 0 every check passed, 1 a check failed, 2 usage, 3 the VM
// could not be created or run.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "minivmm/vm.h"
#include "minivmm_abi/hypercall.h"

namespace {

constexpr uint32_t kAddHypercall = MVMM_HC_USER_FIRST;  // 64
constexpr uint64_t kCounterPort = 0x520;

// RAX = RDI + RSI. Guest arguments are untrusted: a sum that would not fit
// the non-negative result range is refused (the guest gets -EINVAL).
absl::StatusOr<uint64_t> Add(minivmm::HypercallEnv& env, const minivmm::HypercallArgs& args) {
  const uint64_t a = args[0], b = args[1];
  constexpr uint64_t kMax = std::numeric_limits<int64_t>::max();
  if (a > kMax || b > kMax - a) return absl::InvalidArgumentError("add: sum out of range");
  return a + b;
}

// One port that counts the guest's writes and answers a read with the count
// (truncated to the access size). It also checks that the guest wrote
// 1, 2, 3, ... in that order. The VM calls devices on one vCPU thread at a
// time (under its lock, even with several vCPUs), so no locking.
class WriteCounter final : public minivmm::IoDevice {
 public:
  std::string_view Name() const override { return "write-counter"; }

  void Read(uint64_t offset, std::span<uint8_t> data, minivmm::ExitContext& ctx) override {
    uint64_t value = writes_;
    for (uint8_t& byte : data) {  // little-endian, like the port itself
      byte = static_cast<uint8_t>(value);
      value >>= 8;
    }
    ++reads_;
  }

  void Write(uint64_t offset, std::span<const uint8_t> data, minivmm::ExitContext& ctx) override {
    ++writes_;
    if (data.empty() || data[0] != static_cast<uint8_t>(writes_)) in_order_ = false;
  }

  uint64_t writes() const { return writes_; }
  uint64_t reads() const { return reads_; }
  bool in_order() const { return in_order_; }

 private:
  uint64_t writes_ = 0;
  uint64_t reads_ = 0;
  bool in_order_ = true;
};

class StdoutConsole final : public minivmm::ConsoleSink {
 public:
  void Write(std::string_view bytes) override {
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
  }
};

// Prints one failed or passed check; returns whether it passed.
bool Check(bool ok, const std::string& what) {
  std::printf("  [%s] %s\n", ok ? " ok " : "FAIL", what.c_str());
  return ok;
}

uint64_t ReportValue(const std::map<std::string, std::string>& reports, const std::string& key) {
  auto it = reports.find(key);
  if (it == reports.end()) return std::numeric_limits<uint64_t>::max();
  return std::strtoull(it->second.c_str(), nullptr, 10);
}

uint64_t Total(const minivmm::ExitStats& stats) {
  uint64_t total = 0;
  for (uint64_t n : stats.by_reason) total += n;
  return total;
}

void PrintStats(const minivmm::RunResult& result) {
  const minivmm::ExitStats& stats = result.stats;
  std::printf("\nexits by reason\n");
  for (int r = 0; r < static_cast<int>(minivmm::ExitReason::kCount); ++r) {
    if (stats.by_reason[r] == 0) continue;
    std::printf("  %-20s %10llu\n",
                std::string(minivmm::ExitReasonName(static_cast<minivmm::ExitReason>(r))).c_str(),
                static_cast<unsigned long long>(stats.by_reason[r]));
  }
  std::printf("hypercalls                  exits        ops     errors\n");
  for (size_t nr = 0; nr < result.hypercall_names.size() && nr < stats.hc_ops.size(); ++nr) {
    if (stats.hc_ops[nr] == 0) continue;
    std::printf("  %3zu %-16s %10llu %10llu %10llu\n", nr, result.hypercall_names[nr].c_str(),
                static_cast<unsigned long long>(stats.hc_exits[nr]),
                static_cast<unsigned long long>(stats.hc_ops[nr]),
                static_cast<unsigned long long>(stats.hc_errors[nr]));
  }
  std::printf("port-I/O exits by device\n");
  for (size_t i = 0; i < result.pio_devices.size(); ++i) {
    std::printf("  %-20s %10llu\n", result.pio_devices[i].c_str(),
                static_cast<unsigned long long>(stats.pio_by_device[i]));
  }
  std::printf("  %-20s %10llu\n", "(unclaimed)",
              static_cast<unsigned long long>(stats.pio_unclaimed));
  std::printf("exits per vCPU\n");
  for (uint32_t v = 0; v < result.vcpu_count(); ++v)
    std::printf("  vCPU %-15u %10llu\n", v,
                static_cast<unsigned long long>(Total(result.per_vcpu[v])));
}

// workload=custom with `n` calls on `cpus` vCPUs, its console on stdout.
minivmm::VmConfig ConfigFor(uint64_t n, uint64_t cpus, StdoutConsole& console) {
  minivmm::VmConfig config;
  config.memory_bytes = 64ull << 20;
  config.cmdline = "workload=custom,n=" + std::to_string(n);
  config.timeout = absl::Seconds(60);
  config.cpus = static_cast<uint32_t>(cpus);
  config.console = &console;
#ifdef MINIVMM_GUEST_KERNEL_PATH
  // Set by the installed package (find_package(minivmm)): this copy's guest.
  config.kernel_path = MINIVMM_GUEST_KERNEL_PATH;
#endif
  return config;
}

// The run against what the guest was asked to do and what the host saw.
bool CheckRun(const minivmm::RunResult& result, const WriteCounter& counter,
              uint64_t observed_add_calls, uint64_t n, uint64_t cpus) {
  std::map<std::string, std::string> reports(result.reports.entries.begin(),
                                             result.reports.entries.end());
  int device_index = -1;
  for (size_t i = 0; i < result.pio_devices.size(); ++i)
    if (result.pio_devices[i] == counter.Name()) device_index = static_cast<int>(i);
  const uint64_t device_exits = device_index < 0 ? 0 : result.stats.pio_by_device[device_index];
  const uint64_t want_sum = 11 * n * (n + 1) / 2;

  std::printf("\nchecks\n");
  bool ok = Check(result.reason == minivmm::StopReason::kGuestShutdown && result.exit_code == 0,
                  "the guest shut down with code 0");
  ok &= Check(ReportValue(reports, "custom.calls") == n, "custom.calls == " + std::to_string(n));
  ok &= Check(ReportValue(reports, "custom.sum") == want_sum,
              "custom.sum == 11*n*(n+1)/2 == " + std::to_string(want_sum));
  ok &= Check(ReportValue(reports, "custom.port_read") == n,
              "custom.port_read == " + std::to_string(n));
  ok &=
      Check(result.stats.hc_exits[kAddHypercall] == n && result.stats.hc_errors[kAddHypercall] == 0,
            "the VMM counted " + std::to_string(n) + " add hypercalls, none failed");
  ok &= Check(observed_add_calls == n, "the exit observer saw " + std::to_string(n) + " of them");
  ok &= Check(counter.writes() == n && counter.reads() == 1 && counter.in_order(),
              "the device got writes 1.." + std::to_string(n) + " in order and one read");
  ok &= Check(device_exits == n + 1,
              "the VMM counted " + std::to_string(n + 1) + " port-I/O exits on write-counter");
  uint64_t vcpu_sum = 0;
  for (const minivmm::ExitStats& v : result.per_vcpu) vcpu_sum += Total(v);
  ok &= Check(result.vcpu_count() == cpus && vcpu_sum == Total(result.stats) &&
                  result.per_vcpu[0].hc_exits[kAddHypercall] == n,
              std::to_string(cpus) + " vCPUs whose exits add up to the total; vCPU 0 made the " +
                  std::to_string(n) + " add hypercalls");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t n = 3, cpus = 1;
  if (argc > 3 || (argc >= 2 && ((n = std::strtoull(argv[1], nullptr, 10)) < 1 || n > 255)) ||
      (argc == 3 && ((cpus = std::strtoull(argv[2], nullptr, 10)) < 1 || cpus > 32))) {
    std::fprintf(stderr, "usage: %s [N in 1..255 [CPUS in 1..32]]\n", argv[0]);
    return 2;
  }

  StdoutConsole console;
  const minivmm::VmConfig config = ConfigFor(n, cpus, console);
  std::printf("minivmm_embed: kernel %s, command line \"%s\", %u vCPUs\n",
              config.kernel_path.empty() ? minivmm::DefaultGuestKernelPath().c_str()
                                         : config.kernel_path.c_str(),
              config.cmdline.c_str(), config.cpus);

  // The device must outlive the VM (the VM does not own it), so it is
  // declared first and destroyed last.
  WriteCounter counter;
  absl::StatusOr<std::unique_ptr<minivmm::Vm>> vm = minivmm::Vm::Create(config);
  if (!vm.ok()) {
    std::fprintf(stderr, "minivmm_embed: %s\n", vm.status().ToString().c_str());
    return 3;
  }

  // Extension points: all registered before Run().
  absl::Status status = (*vm)->RegisterHypercall(kAddHypercall, "add", Add);
  if (status.ok()) status = (*vm)->RegisterPioDevice(kCounterPort, 1, &counter);
  if (!status.ok()) {
    std::fprintf(stderr, "minivmm_embed: %s\n", status.ToString().c_str());
    return 3;
  }
  uint64_t observed_add_calls = 0;
  (*vm)->SetExitObserver([&](const minivmm::ExitEvent& event) {
    if (event.hypercall == kAddHypercall) ++observed_add_calls;
  });

  absl::StatusOr<minivmm::RunResult> result = (*vm)->Run();
  if (!result.ok()) {
    std::fprintf(stderr, "minivmm_embed: %s\n", result.status().ToString().c_str());
    return 3;
  }
  std::fflush(stdout);
  std::printf("\nminivmm_embed: %s, exit code %d (%s), %.3f ms\n",
              std::string(minivmm::StopReasonName(result->reason)).c_str(), result->exit_code,
              result->detail.c_str(), absl::ToDoubleMilliseconds(result->elapsed));
  PrintStats(*result);

  const bool ok = CheckRun(*result, counter, observed_add_calls, n, cpus);
  std::printf("minivmm_embed: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
