// The seed table's arithmetic on made-up bench results (no KVM): time per
// unit, the in-spread mark, "explained by exits" from the bare exit's cost
// only where a change is outside the spread, the wrapper's share, and the
// flag above 100%.
#include "cli/bench_seeds.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace minivmm::cli {
namespace {

Stats Of(std::vector<double> v) { return Summarize(std::move(v)); }

// One irq result: `tsc` guest TSC per restore (its runs), `exits` per restore.
ConfigResult Irq(const std::string& configuration, std::vector<double> tsc, double exits) {
  ConfigResult r;
  r.workload = "irq";
  r.workload_spec = "irq";
  r.backend = "pv";
  r.configuration = configuration;
  r.metrics["guest.tsc_per_op_net"] = Of(std::move(tsc));
  r.metrics["exits_per_op"] = Of({exits, exits, exits});
  r.metrics["kvm.insn_emulation_per_op"] = Of({100, 100, 100});
  return r;
}

const SeedComparison* Against(const std::vector<SeedResult>& seeds, const std::string& baseline) {
  for (const SeedResult& s : seeds)
    for (const SeedComparison& c : s.comparisons)
      if (s.def.op == "irq_restore" && c.baseline == baseline) return &c;
  return nullptr;
}

constexpr uint64_t kTscKhz = 1'000'000;  // 1 GHz: 1000 TSC = 1 us

ExitCost Cost(double bare, double wrapped) {
  return {Of({bare, bare, bare}), Of({wrapped, wrapped, wrapped})};
}

TEST(BenchSeedsTest, ExplainedByExitsUsesTheBareExitOutsideTheSpread) {
  // naive 2 exits per restore at 10,000 TSC, optimized 1.5 at 8,000 (±1%):
  // 0.5 exits saved x 1,000 TSC bare = 500 of the 2,000 saved = 25%; the
  // wrapper adds 2,000 per exit: 1,000 of 2,000 = 50%.
  std::vector<ConfigResult> results = {Irq("naive", {9900, 10000, 10100}, 2),
                                       Irq("irq_restore", {7920, 8000, 8080}, 1.5)};
  std::vector<SeedResult> seeds = SeedResults(results, Cost(1000, 3000), kTscKhz);
  const SeedComparison* c = Against(seeds, "naive");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->within_spread);
  EXPECT_DOUBLE_EQ(c->exits_saved_per_unit, 0.5);
  ASSERT_TRUE(c->exit_share.has_value());
  EXPECT_NEAR(*c->exit_share, 0.25, 1e-9);
  ASSERT_TRUE(c->wrapper_share.has_value());
  EXPECT_NEAR(*c->wrapper_share, 0.5, 1e-9);
  ASSERT_TRUE(c->insns_before.has_value());
  EXPECT_DOUBLE_EQ(*c->insns_before, 100);
  const std::string table = RenderSeeds(seeds, Cost(1000, 3000), kTscKhz, 3);
  EXPECT_NE(table.find(" 25% "), std::string::npos) << table;
  EXPECT_NE(table.find(" 50% "), std::string::npos) << table;
  EXPECT_NE(table.find("one bare exit"), std::string::npos) << table;
  EXPECT_EQ(table.find(" ~ "), std::string::npos) << table;
}

TEST(BenchSeedsTest, AChangeInsideTheSpreadIsMarkedAndNotExplained) {
  // -5% with a ±20% spread: marked `~`, no share.
  std::vector<ConfigResult> results = {Irq("naive", {8000, 10000, 12000}, 2),
                                       Irq("irq_restore", {7600, 9500, 11400}, 1.5)};
  std::vector<SeedResult> seeds = SeedResults(results, Cost(1000, 3000), kTscKhz);
  const SeedComparison* c = Against(seeds, "naive");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->within_spread);
  EXPECT_FALSE(c->exit_share.has_value());
  EXPECT_FALSE(c->wrapper_share.has_value());
  const std::string table = RenderSeeds(seeds, Cost(1000, 3000), kTscKhz, 3);
  EXPECT_NE(table.find("-5.0% ~"), std::string::npos) << table;
  EXPECT_NE(table.find("- (~)"), std::string::npos) << table;
}

TEST(BenchSeedsTest, AShareAboveAllOfTheSavingIsFlagged) {
  // 0.5 exits saved x 10,000 TSC = 5,000 against 2,000 saved: 250%, flagged.
  std::vector<ConfigResult> results = {Irq("naive", {9900, 10000, 10100}, 2),
                                       Irq("irq_restore", {7920, 8000, 8080}, 1.5)};
  std::vector<SeedResult> seeds = SeedResults(results, Cost(10000, 10000), kTscKhz);
  const SeedComparison* c = Against(seeds, "naive");
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->exit_share.has_value());
  EXPECT_NEAR(*c->exit_share, 2.5, 1e-9);
  const std::string table = RenderSeeds(seeds, Cost(10000, 10000), kTscKhz, 3);
  EXPECT_NE(table.find("250% !"), std::string::npos) << table;
  EXPECT_NE(table.find("!: above 100%"), std::string::npos) << table;
}

}  // namespace
}  // namespace minivmm::cli
