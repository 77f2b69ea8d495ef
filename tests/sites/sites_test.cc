// Whole-VM runs with the exit sites recorded (docs/sites.md). Only
// identities are asserted (sites add up to the exit counts; which function
// made which exits), never a count that depends on the host.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "minivmm/exit_sites.h"
#include "minivmm/symbolizer.h"
#include "vm_test_util.h"

namespace minivmm::testing {
namespace {

constexpr char kNaiveCtx[] = "backend=pv pvops=naive workload=ctx";
// Every op naive but fpu_switch.
constexpr char kFpuOptimizedCtx[] =
    "backend=pv pvops=irq_restore:naive,fpu_switch:optimized,tls:naive,pte_flags:naive,batch:off "
    "workload=ctx";

RunResult RunWithSites(const std::string& cmdline, bool wasted, uint32_t cpus = 1) {
  RecordingConsole console;
  VmConfig config;
  config.kernel_path = BuiltinGuest();
  config.cmdline = cmdline;
  config.timeout = absl::Seconds(60);
  config.analyse_waste = wasted;
  config.record_sites = true;
  config.cpus = cpus;
  config.console = &console;
  absl::StatusOr<std::unique_ptr<Vm>> vm = Vm::Create(config);
  EXPECT_TRUE(vm.ok()) << vm.status();
  if (!vm.ok()) return {};
  absl::StatusOr<RunResult> result = (*vm)->Run();
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return {};
  EXPECT_EQ(result->reason, StopReason::kGuestShutdown) << result->detail << console.out;
  return *result;
}

// The function names of a stack, every inlined frame included.
class Names {
 public:
  Names() {
    absl::StatusOr<std::unique_ptr<Symbolizer>> s = Symbolizer::Open(BuiltinGuest());
    EXPECT_TRUE(s.ok()) << s.status();
    if (s.ok()) symbolizer_ = *std::move(s);
  }
  bool Holds(const ExitSite& site, const std::string& function) const {
    for (size_t i = 0; i < site.depth && symbolizer_ != nullptr; ++i)
      for (const SourceFrame& f : symbolizer_->Lookup(site.frames[i] - (i > 0 ? 1 : 0)))
        if (f.function == function) return true;
    return false;
  }

 private:
  std::unique_ptr<Symbolizer> symbolizer_;
};

// Every exit at exactly one site: per vCPU and cause, the sites' exits are
// the cause's exits, and all sites together are all exits.
void ExpectSitesAddUp(const RunResult& r) {
  ASSERT_EQ(r.sites_per_vcpu.size(), r.per_vcpu.size());
  for (size_t v = 0; v < r.per_vcpu.size(); ++v) {
    SCOPED_TRACE("vCPU " + std::to_string(v));
    const ExitStats& stats = r.per_vcpu[v];
    std::array<uint64_t, static_cast<int>(Cause::kCount) + 1> exits{}, wasted{};
    uint64_t all = 0;
    for (const auto& [site, count] : r.sites_per_vcpu[v].counts) {
      exits[static_cast<int>(site.cause)] += count.exits;
      wasted[static_cast<int>(site.cause)] += count.wasted_exits();
      all += count.exits;
    }
    uint64_t by_reason = 0;
    for (uint64_t n : stats.by_reason) by_reason += n;
    EXPECT_EQ(all, by_reason);
    for (int c = 0; c < static_cast<int>(Cause::kCount); ++c) {
      SCOPED_TRACE(std::string(CauseName(static_cast<Cause>(c))));
      EXPECT_EQ(exits[c], stats.causes[c].exits);
      EXPECT_EQ(wasted[c], stats.wasted_by_cause[c].exits);
    }
    EXPECT_EQ(r.sites_per_vcpu[v].wasted_unplaced, 0u);
  }
}

TEST(SitesTest, EveryCausesSitesSumToItsExits) {
  REQUIRE_KVM();
  const RunResult r = RunWithSites("backend=pv pvops=naive workload=ctx,tls=same", true);
  ASSERT_GT(r.stats.causes[static_cast<int>(Cause::kCr0Write)].exits, 0u);
  ExpectSitesAddUp(r);
}

TEST(SitesTest, EveryVcpusSitesSumToItsExits) {
  REQUIRE_KVM();
  const RunResult r = RunWithSites("backend=pv pvops=naive workload=hello,lines=2", true, 3);
  ASSERT_EQ(r.per_vcpu.size(), 3u);
  // A vCPU without exits would test nothing.
  for (const ExitStats& s : r.per_vcpu)
    ASSERT_GT(s.by_reason[static_cast<int>(ExitReason::kIo)], 0u);
  ExpectSitesAddUp(r);
}

TEST(SitesTest, NaiveCtxDescriptorUpdatesAllComeFromLoadTls) {
  REQUIRE_KVM();
  const RunResult r = RunWithSites(kNaiveCtx, false);
  const Names names;
  uint64_t from_load_tls = 0;
  for (const auto& [site, count] : r.sites_per_vcpu[0].counts) {
    if (site.cause != Cause::kDescriptorUpdate) continue;
    EXPECT_TRUE(names.Holds(site, "LoadTls")) << count.exits << " exits elsewhere";
    if (names.Holds(site, "LoadTls")) from_load_tls += count.exits;
  }
  const uint64_t all = r.stats.causes[static_cast<int>(Cause::kDescriptorUpdate)].exits;
  ASSERT_GT(all, 0u);
  EXPECT_EQ(from_load_tls, all);
}

// CR0 exits by whether FpuSwitchPrepare is on their stack.
std::pair<uint64_t, uint64_t> Cr0Exits(const RunResult& r, const Names& names) {
  uint64_t prepare = 0, other = 0;
  for (const auto& [site, count] : r.sites_per_vcpu[0].counts) {
    if (site.cause != Cause::kCr0Write) continue;
    (names.Holds(site, "FpuSwitchPrepare") ? prepare : other) += count.exits;
  }
  return {prepare, other};
}

TEST(SitesTest, TheCr0WritesOptimizedFpuSwitchRemovesComeFromFpuSwitchPrepare) {
  REQUIRE_KVM();
  const Names names;
  const RunResult naive = RunWithSites(kNaiveCtx, false);
  const RunResult optimized = RunWithSites(kFpuOptimizedCtx, false);
  const auto [naive_prepare, naive_other] = Cr0Exits(naive, names);
  const auto [optimized_prepare, optimized_other] = Cr0Exits(optimized, names);
  const uint64_t naive_all = naive.stats.causes[static_cast<int>(Cause::kCr0Write)].exits;
  const uint64_t optimized_all = optimized.stats.causes[static_cast<int>(Cause::kCr0Write)].exits;
  ASSERT_GT(naive_all, optimized_all) << "fpu_switch:optimized removed no CR0 write";
  EXPECT_EQ(naive_other, optimized_other);
  EXPECT_EQ(naive_prepare - optimized_prepare, naive_all - optimized_all);
}

TEST(SitesTest, TopWastedSitesAreLoadTlsFpuSwitchPrepareAndTheIrqRestore) {
  REQUIRE_KVM();
  const RunResult r = RunWithSites("backend=pv pvops=naive workload=ctx,tls=same", true);
  std::vector<std::pair<uint64_t, const ExitSite*>> ranked;
  for (const auto& [site, count] : r.sites_per_vcpu[0].counts)
    if (count.wasted_exits() != 0) ranked.emplace_back(count.wasted_exits(), &site);
  std::sort(ranked.begin(), ranked.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  ranked.resize(std::min<size_t>(ranked.size(), 10));
  const Names names;
  for (const char* function : {"LoadTls", "FpuSwitchPrepare", "ArchIrqRestore"}) {
    SCOPED_TRACE(function);
    EXPECT_TRUE(std::any_of(ranked.begin(), ranked.end(),
                            [&](const auto& w) { return names.Holds(*w.second, function); }));
  }
}

TEST(SitesTest, ARunWithoutSitesRecordsNone) {
  REQUIRE_KVM();
  GuestRun run = RunGuest(BuiltinGuest(), kNaiveCtx);
  EXPECT_TRUE(run.result.sites_per_vcpu.empty());
}

}  // namespace
}  // namespace minivmm::testing
