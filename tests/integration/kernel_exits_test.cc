// --kernel-exits (VmConfig::kernel_exits, include/minivmm/kernel_exits.h):
// every exit of the run as KVM's kvm:kvm_exit tracepoint reports it, checked
// exactly against KVM's own `exits` statistic and, on pc_exits, against the
// guest's N CPUIDs, N MSR reads and N HLTs at the addresses it prints.
#include <cstdint>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "minivmm/machine.h"
#include "minivmm/vm.h"
#include "tests/integration/pc_test_util.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
namespace {

std::map<std::string, std::string> Values(const std::string& console) {
  std::map<std::string, std::string> values;
  std::istringstream in(console);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) values[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return values;
}

uint64_t HostDelta(const RunResult& r, const std::string& name) {
  for (const HostCounter& c : r.host_counters) {
    if (c.name == name) return c.delta;
  }
  return 0;
}

// The tracepoint's names for the reasons: VMX's on kvm_intel, SVM's on
// kvm_amd (tdp_fault: a nested page fault, NPT's or EPT's).
struct ReasonNames {
  std::string cpuid, msr, hlt, io, tdp_fault;
};
ReasonNames NamesHere() {
  std::error_code ec;
  if (std::filesystem::exists("/sys/module/kvm_intel", ec))
    return {"CPUID", "MSR_READ", "HLT", "IO_INSTRUCTION", "EPT_VIOLATION"};
  return {"cpuid", "msr", "hlt", "io", "npf"};
}

// Whether this host's KVM uses two-dimensional paging (kvm_amd's npt,
// kvm_intel's ept).
bool TdpHere() {
  for (const char* param :
       {"/sys/module/kvm_amd/parameters/npt", "/sys/module/kvm_intel/parameters/ept"}) {
    std::ifstream in(param);
    std::string value;
    if (in >> value) return value == "Y" || value == "1";
  }
  return false;
}

// kvm_pvm's refusal (docs/hosts.md), the one host where the tracepoint
// cannot give the run's exits; on every other KVM there is none.
constexpr char kPvmRefusal[] =
    "--kernel-exits: kvm_pvm does not report the guest code it emulates through kvm:kvm_exit, "
    "so this host's exits cannot be counted from it (docs/hosts.md)";

bool OnPvm() {
  std::error_code ec;
  return std::filesystem::exists("/sys/module/kvm_pvm", ec);
}

// On kvm_pvm, Vm::Create refuses with kPvmRefusal before anything runs
// (asserted; true: nothing more to check); elsewhere it does not refuse.
bool RefusedOnPvm(const VmConfig& config) {
  if (!OnPvm()) return false;
  absl::StatusOr<std::unique_ptr<Vm>> vm = Vm::Create(config);
  EXPECT_FALSE(vm.ok());
  if (!vm.ok()) {
    EXPECT_EQ(vm.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(std::string(vm.status().message()), kPvmRefusal);
  }
  return true;
}

TEST(KernelExitsTest, PcExitsAreExactByReasonAndAddress) {
  REQUIRE_KVM();
  VmConfig config = PcConfig("pc_exits", "");
  config.kernel_exits = true;
  if (RefusedOnPvm(config)) return;
  GuestRun run = RunGuestWith(config);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  ASSERT_EQ(run.result.exit_code, 1) << run.console;
  ASSERT_EQ(run.result.kernel_exits.size(), 1u);
  const KernelExitCounts& k = run.result.kernel_exits[0];
  EXPECT_EQ(k.lost, 0u);
  // Every exit KVM counted, none more.
  EXPECT_EQ(k.exits, HostDelta(run.result, "exits"));
  const std::map<std::string, std::string> v = Values(run.console);
  const uint64_t n = std::stoull(v.at("n"));
  const ReasonNames names = NamesHere();
  auto at = [&](const std::string& reason, const std::string& key) {
    auto it = k.by_reason_rip.find({reason, std::stoull(v.at(key), nullptr, 16)});
    return it == k.by_reason_rip.end() ? 0 : it->second;
  };
  EXPECT_EQ(at(names.cpuid, "cpuid_rip"), n);
  EXPECT_EQ(at(names.msr, "rdmsr_rip"), n);
  EXPECT_EQ(at(names.hlt, "hlt_rip"), n);
  // kvm:kvm_msr's detail of each: the N reads of IA32_APIC_BASE and the
  // one before them that enables x2APIC, all KVM's.
  auto detail = k.by_reason_detail.find({names.msr, "rdmsr 0x1b"});
  EXPECT_EQ(detail == k.by_reason_detail.end() ? 0 : detail->second, n + 1);
  // None of them reached minivmm, unless a kick returned KVM_RUN right
  // after one (an `intr` return).
  auto to_vmm =
      k.to_vmm_by_reason_rip.find({names.msr, std::stoull(v.at("rdmsr_rip"), nullptr, 16)});
  auto kicks = k.returns.find("intr");
  EXPECT_LE(to_vmm == k.to_vmm_by_reason_rip.end() ? 0 : to_vmm->second,
            kicks == k.returns.end() ? 0 : kicks->second);
  // The loops ran before the guest's first line, "n=N": all in the phase
  // that line ends.
  ASSERT_GE(run.result.kernel_exit_phases.size(), 2u);
  const KernelExitPhase& first = run.result.kernel_exit_phases.front();
  EXPECT_EQ(first.line, "n=" + v.at("n"));
  auto it =
      first.counts.by_reason_rip.find({names.cpuid, std::stoull(v.at("cpuid_rip"), nullptr, 16)});
  EXPECT_EQ(it == first.counts.by_reason_rip.end() ? 0 : it->second, n);
  // Its only ports are COM1 and debug-exit, both minivmm's: every port exit
  // KVM made reached minivmm.
  EXPECT_EQ(k.by_reason.at(names.io),
            run.result.stats.by_reason[static_cast<int>(ExitReason::kIo)]);
}

// Whether this host's KVM lets a BPF program read the guest's stack at an
// exit (KvmExitStacks: kvm_amd, with BTF for its module); on kvm_intel the
// run says in its notes why not.
constexpr char kNoStacksOnVmx[] =
    "--kernel-exits --sites: each in-kernel exit's site is its RIP alone, without its "
    "frame-pointer stack: the guest's RIP, CPL and CS at an exit are in kvm_amd's VMCB only (on "
    "kvm_intel they are in the VMCS, which a BPF program cannot read)";

bool OnVmx() {
  std::error_code ec;
  return std::filesystem::exists("/sys/module/kvm_intel", ec);
}

// The stacks of the exits that reached minivmm, as the tracepoint's BPF
// program and minivmm's own walk (the site recorder's, docs/sites.md) each
// saw them: the same walk of the same frames at the same exit, from two
// sides. One difference, KVM's: an MMIO write reaches minivmm after KVM
// completed the instruction, so minivmm's RIP is the next instruction's
// where the tracepoint's is the faulting one's; for those (a nested page
// fault that reached minivmm, an MMIO exit) only the return addresses are
// compared (the RIP is set to 0 on both sides).
std::map<std::vector<uint64_t>, uint64_t> TracedToVmmStacks(const KernelExitCounts& k,
                                                            const std::string& tdp_fault) {
  std::map<std::vector<uint64_t>, uint64_t> out;
  for (const auto& [key, n] : k.to_vmm_by_reason_stack) {
    std::vector<uint64_t> stack = key.second;
    if (key.first == tdp_fault) stack[0] = 0;
    out[stack] += n;
  }
  return out;
}
// The exits a map counts, over all its keys.
template <typename Map>
uint64_t Total(const Map& counts) {
  uint64_t sum = 0;
  for (const auto& [key, n] : counts) sum += n;
  return sum;
}

std::map<std::vector<uint64_t>, uint64_t> OwnStacks(const ExitSites& sites) {
  std::map<std::vector<uint64_t>, uint64_t> out;
  for (const auto& [site, count] : sites.counts) {
    const std::span<const uint64_t> walked = site.stack();
    std::vector<uint64_t> stack(walked.begin(), walked.end());
    if (site.reason == ExitReason::kMmio) stack[0] = 0;
    out[stack] += count.exits;
  }
  return out;
}

// With --sites too, each exit's whole frame-pointer stack, read at the exit
// by the BPF program: the N CPUIDs, N MSR reads and N HLTs each at exactly
// [the instruction, its loop's return into guest_main, guest_main's return
// into _start], all N, in the phase of the first line.
TEST(KernelExitsTest, PcExitsStacksAreEachInstructionsCallChain) {
  REQUIRE_KVM();
  VmConfig config = PcConfig("pc_exits", "");
  config.kernel_exits = true;
  config.record_sites = true;
  if (RefusedOnPvm(config)) return;
  GuestRun run = RunGuestWith(config);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  ASSERT_EQ(run.result.exit_code, 1) << run.console;
  if (OnVmx()) {
    EXPECT_FALSE(run.result.kernel_exit_stacks);
    EXPECT_NE(std::find(run.result.notes.begin(), run.result.notes.end(), kNoStacksOnVmx),
              run.result.notes.end());
    return;
  }
  ASSERT_TRUE(run.result.kernel_exit_stacks) << ::testing::PrintToString(run.result.notes);
  ASSERT_EQ(run.result.kernel_exits.size(), 1u);
  const KernelExitCounts& k = run.result.kernel_exits[0];
  EXPECT_EQ(k.lost, 0u);
  EXPECT_EQ(k.unstacked, 0u);
  // Every exit has its stack.
  EXPECT_EQ(Total(k.by_reason_stack), k.exits);
  const std::map<std::string, std::string> v = Values(run.console);
  const uint64_t n = std::stoull(v.at("n"));
  auto hex = [&](const std::string& key) { return std::stoull(v.at(key), nullptr, 16); };
  const uint64_t main_ret = hex("main_ret");
  const ReasonNames names = NamesHere();
  auto at = [&](const KernelExitCounts& c, const std::string& reason, const std::string& what) {
    const std::vector<uint64_t> stack = {hex(what + "_rip"), hex(what + "_ret"), main_ret};
    auto it = c.by_reason_stack.find({reason, stack});
    return it == c.by_reason_stack.end() ? 0 : it->second;
  };
  EXPECT_EQ(at(k, names.cpuid, "cpuid"), n);
  EXPECT_EQ(at(k, names.msr, "rdmsr"), n);
  EXPECT_EQ(at(k, names.hlt, "hlt"), n);
  ASSERT_GE(run.result.kernel_exit_phases.size(), 2u);
  EXPECT_EQ(at(run.result.kernel_exit_phases.front().counts, names.cpuid, "cpuid"), n);
  // The exits that reached minivmm have the stacks minivmm's own walk gave
  // them.
  EXPECT_EQ(TracedToVmmStacks(k, names.tdp_fault), OwnStacks(run.result.sites_per_vcpu.at(0)));
}

// pc-testdev's flush-page port (pc_flush): each flush makes the host, and
// KVM with it, drop the page's mapping, so the guest's next write to it is
// a nested page fault KVM handles in the kernel; a page never flushed takes
// none in the loop, and without pc-testdev (the port unclaimed) neither
// does the flushed one. How many faults KVM takes to map a flushed page
// back varies (1 or 2 per flush seen on the nested kvm_amd, from run to
// run): at least one each is what the flush promises.
TEST(KernelExitsTest, PcTestdevFlushMakesTheNextWriteANestedPageFault) {
  REQUIRE_KVM();
  for (bool testdev : {true, false}) {
    VmConfig config = PcConfig("pc_flush", "");
    config.kernel_exits = true;
    config.pc_testdev = testdev;
    if (RefusedOnPvm(config)) return;
    ASSERT_TRUE(TdpHere()) << "this host's KVM shadows the guest's memory: no nested page faults";
    GuestRun run = RunGuestWith(config);
    ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
    ASSERT_EQ(run.result.exit_code, 1) << run.console;
    ASSERT_EQ(run.result.kernel_exits.size(), 1u);
    const KernelExitCounts& k = run.result.kernel_exits[0];
    EXPECT_EQ(k.lost, 0u);
    const std::map<std::string, std::string> v = Values(run.console);
    const uint64_t n = std::stoull(v.at("n"));
    const std::string fault = NamesHere().tdp_fault;
    auto at = [&](const std::string& key) {
      auto it = k.by_reason_rip.find({fault, std::stoull(v.at(key), nullptr, 16)});
      return it == k.by_reason_rip.end() ? 0 : it->second;
    };
    if (testdev) {
      EXPECT_GE(at("flush_touch_rip"), n);
      EXPECT_LE(at("flush_touch_rip"), 2 * n);
    } else {
      EXPECT_EQ(at("flush_touch_rip"), 0u);
      EXPECT_EQ(run.result.stats.pio_unclaimed, n);
    }
    EXPECT_EQ(at("plain_touch_rip"), 0u);
  }
}

// The built-in guest, on 1 and 2 vCPUs: the vCPUs' tracepoint exits are
// KVM's `exits` statistic exactly, none lost; each vCPU's returns of
// KVM_RUN are minivmm's own count of its exits, reason by reason; the
// guest's reports end its phases.
TEST(KernelExitsTest, EachVcpusExitsAreKvmsStatisticExactly) {
  REQUIRE_KVM();
  for (uint32_t cpus : {1u, 2u}) {
    VmConfig config = GuestConfig(DefaultGuestKernelPath(), "backend=native workload=ctx",
                                  absl::Seconds(120), 0, false, cpus);
    config.kernel_exits = true;
    config.record_sites = true;
    if (RefusedOnPvm(config)) return;
    GuestRun run = RunGuestWith(config);
    ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
    ASSERT_EQ(run.result.kernel_exits.size(), cpus);
    ASSERT_EQ(run.result.per_vcpu.size(), cpus);
    uint64_t total = 0;
    for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
      const KernelExitCounts& k = run.result.kernel_exits[cpu];
      EXPECT_EQ(k.lost, 0u) << cpu;
      EXPECT_EQ(Total(k.by_reason), k.exits) << cpu;
      total += k.exits;
      // KVM's returns to minivmm (kvm:kvm_userspace_exit) are the exits
      // minivmm counted on this vCPU, reason by reason.
      const ExitStats& own = run.result.per_vcpu[cpu];
      uint64_t returns = 0;
      for (int r = 0; r < static_cast<int>(ExitReason::kCount); ++r) {
        const std::string name(ExitReasonName(static_cast<ExitReason>(r)));
        auto it = k.returns.find(name);
        EXPECT_EQ(it == k.returns.end() ? 0 : it->second, own.by_reason[r]) << cpu << " " << name;
        returns += own.by_reason[r];
      }
      EXPECT_EQ(k.returns.count("failed"), 0u) << cpu;
      // Each return follows at most one exit (none when KVM_RUN returned
      // before entering the guest, a kick already pending), and every
      // exit not followed by one KVM handled itself.
      uint64_t to_vmm = 0;
      for (const auto& [name, n] : k.to_vmm_by_reason) {
        EXPECT_LE(n, k.by_reason.at(name)) << cpu << " " << name;
        to_vmm += n;
      }
      EXPECT_LE(to_vmm, returns) << cpu;
    }
    // KVM's statistic is the sum over the vCPUs' stats files.
    EXPECT_EQ(total, HostDelta(run.result, "exits")) << cpus << " vCPUs";
    // With --sites, every exit's stack, the ones that reached minivmm those
    // minivmm's own walk gave them.
    if (!OnVmx()) {
      ASSERT_TRUE(run.result.kernel_exit_stacks) << ::testing::PrintToString(run.result.notes);
      for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
        const KernelExitCounts& k = run.result.kernel_exits[cpu];
        EXPECT_EQ(k.unstacked, 0u) << cpu;
        EXPECT_EQ(Total(k.by_reason_stack), k.exits) << cpu;
        EXPECT_EQ(TracedToVmmStacks(k, NamesHere().tdp_fault),
                  OwnStacks(run.result.sites_per_vcpu.at(cpu)))
            << cpu;
      }
    }
    // Phases: every exit in exactly one.
    uint64_t in_phases = 0;
    std::vector<std::string> ended;
    for (const KernelExitPhase& p : run.result.kernel_exit_phases) {
      in_phases += p.counts.exits;
      if (!p.line.empty()) ended.push_back(p.line);
    }
    EXPECT_EQ(in_phases, total);
    // The built-in guest's reports end its phases: its configuration, the
    // workload's record, the kernel's final record.
    EXPECT_EQ(ended, (std::vector<std::string>{"config", "ctx", "kernel"})) << cpus << " vCPUs";
  }
}

}  // namespace
}  // namespace minivmm::testing
