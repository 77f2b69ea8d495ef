// Whole-VM runs with the exit sites recorded (docs/sites.md). Only
// identities are asserted (sites add up to the exit counts; which function
// made which exits), never a count that depends on the host.
#include <algorithm>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "minivmm/exit_sites.h"
#include "minivmm/symbolizer.h"
#include "minivmm_abi/hypercall.h"
#include "vm_test_util.h"

namespace minivmm::testing {
namespace {

constexpr char kNaiveCtx[] = "backend=pv pvops=naive workload=ctx";
// Every op naive but fpu_switch.
constexpr char kFpuOptimizedCtx[] =
    "backend=pv pvops=irq_restore:naive,fpu_switch:optimized,tls:naive,pte_flags:naive,batch:off "
    "workload=ctx";

RunResult RunWithSites(const std::string& cmdline, bool wasted, uint32_t cpus = 1,
                       const std::string& kernel = BuiltinGuest()) {
  RecordingConsole console;
  VmConfig config;
  config.kernel_path = kernel;
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

// tests/tiny_guests/bad_frames.S: case K makes K console writes with RBP
// at a corrupt chain. By case, the return addresses its walk must find after
// the RIP (frame_walk.h's rules); the VMM must run to the guest's shutdown.
std::map<uint64_t, std::vector<uint64_t>> BadFrameStacks() {
  std::map<uint64_t, std::vector<uint64_t>> want = {{1, {}},
                                                    {2, {}},
                                                    {3, {}},
                                                    {4, {}},
                                                    {5, {}},
                                                    {6, {0x1111}},
                                                    {7, {0x2221, 0x2222}},
                                                    {8, {0x4440, 0x4441}},
                                                    {9, {}},
                                                    {10, {0x5551}},
                                                    {11, {}}};
  for (uint64_t i = 0; i + 1 < kMaxSiteFrames; ++i) want[11].push_back(0x3000 + i);
  return want;
}

// The console-write sites of a bad_frames run, by exit count (the case).
std::map<uint64_t, ExitSite> BadFrameSites(const RunResult& r) {
  std::map<uint64_t, ExitSite> by_case;
  for (const auto& [site, count] : r.sites_per_vcpu[0].counts) {
    if (site.hypercall != MVMM_HC_console_io) continue;
    EXPECT_TRUE(by_case.emplace(count.exits, site).second) << "two sites of " << count.exits;
  }
  return by_case;
}

TEST(SitesTest, ACorruptFrameChainGivesTheStacksTheWalkersRulesSay) {
  REQUIRE_KVM();
  const RunResult r = RunWithSites("", false, 1, TinyGuest("bad_frames"));
  ASSERT_EQ(r.sites_per_vcpu.size(), 1u);
  ExpectSitesAddUp(r);
  const std::map<uint64_t, ExitSite> sites = BadFrameSites(r);
  const std::map<uint64_t, std::vector<uint64_t>> want = BadFrameStacks();
  ASSERT_EQ(sites.size(), want.size());
  uint64_t last_rip = 0;
  for (const auto& [k, stack] : want) {
    SCOPED_TRACE("case " + std::to_string(k));
    ASSERT_TRUE(sites.contains(k));
    const ExitSite& site = sites.at(k);
    EXPECT_FALSE(site.user);
    EXPECT_GT(site.frames[0], last_rip);  // the cases' `out`s in order
    last_rip = site.frames[0];
    const std::span<const uint64_t> got = site.stack().subspan(1);
    EXPECT_EQ(std::vector<uint64_t>(got.begin(), got.end()), stack);
  }
}

// The same guest stripped: the same stacks, and nothing names them, so the
// record and the tables fall back to raw addresses (docs/sites.md).
TEST(SitesTest, AStrippedGuestGivesTheSameStacksAsRawAddresses) {
  REQUIRE_KVM();
  const RunResult plain = RunWithSites("", false, 1, TinyGuest("bad_frames"));
  const RunResult stripped = RunWithSites("", false, 1, TinyGuest("bad_frames_stripped"));
  ASSERT_EQ(stripped.sites_per_vcpu.size(), 1u);
  ExpectSitesAddUp(stripped);
  const std::map<uint64_t, ExitSite> a = BadFrameSites(plain), b = BadFrameSites(stripped);
  ASSERT_EQ(b.size(), BadFrameStacks().size());
  EXPECT_EQ(a, b);
  absl::StatusOr<std::unique_ptr<Symbolizer>> named = Symbolizer::Open(TinyGuest("bad_frames"));
  absl::StatusOr<std::unique_ptr<Symbolizer>> raw =
      Symbolizer::Open(TinyGuest("bad_frames_stripped"));
  ASSERT_TRUE(named.ok() && raw.ok()) << named.status() << raw.status();
  for (const auto& [k, site] : b) {
    SCOPED_TRACE("case " + std::to_string(k));
    // A label without a size: the symbol and the offset from it.
    EXPECT_EQ((*named)->Lookup(site.frames[0]).front().function.rfind("_start+0x", 0), 0u);
    const std::vector<SourceFrame> frames = (*raw)->Lookup(site.frames[0]);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].function, "");
  }
}

uint64_t Batchable(const RunResult& r) {
  uint64_t n = 0;
  for (const ExitSites& sites : r.sites_per_vcpu)
    for (const auto& [site, count] : sites.counts) n += count.batchable;
  return n;
}

uint64_t AllExits(const RunResult& r) {
  uint64_t n = 0;
  for (uint64_t e : r.stats.by_reason) n += e;
  return n;
}

// What SiteCount::batchable says a batch could carry is what batching
// saves: the exits that batch:on removes, plus those it leaves batchable (a
// run of calls outside any lazy section), exactly, on every KVM. Where the
// host delivers ring-3 #NM (kvm_amd), the #NM handler's clts, which no
// batch carries, follows a switch's last call with no interrupt between:
// it is not counted (docs/sites.md).
TEST(SitesTest, TheExitsABatchCouldHaveCarriedAreWhatBatchingSaves) {
  REQUIRE_KVM();
  const RunResult off = RunWithSites("backend=pv pvops=naive workload=ctx,tls=same", false);
  const RunResult on = RunWithSites("backend=pv pvops=naive,batch:on workload=ctx,tls=same", false);
  ASSERT_GT(Batchable(off), 0u);
  ASSERT_GT(AllExits(off), AllExits(on));
  EXPECT_EQ(Batchable(off), AllExits(off) - AllExits(on) + Batchable(on));
  // Without batching, LoadTls's descriptor updates are most of them.
  const Names names;
  uint64_t load_tls = 0;
  for (const auto& [site, count] : off.sites_per_vcpu[0].counts)
    if (names.Holds(site, "LoadTls")) load_tls += count.batchable;
  EXPECT_GT(2 * load_tls, Batchable(off));
}

TEST(SitesTest, ARunWithoutSitesRecordsNone) {
  REQUIRE_KVM();
  GuestRun run = RunGuest(BuiltinGuest(), kNaiveCtx);
  EXPECT_TRUE(run.result.sites_per_vcpu.empty());
}

}  // namespace
}  // namespace minivmm::testing
