// ExitTimeline (cli/exit_timeline.h): the record's exits over time, without
// a VM.
#include "cli/exit_timeline.h"

#include "gtest/gtest.h"
#include "minivmm/exit_sites.h"

namespace minivmm::cli {
namespace {

ExitEvent At(int64_t ns, const ExitSite* site) {
  ExitEvent e;
  e.exit_ns = ns;
  e.site = site;
  return e;
}

TEST(ExitTimelineTest, ARunPastTheLastBinDoublesTheWidthAndKeepsEveryExit) {
  ExitSite tls, none;
  tls.cause = Cause::kDescriptorUpdate;
  ExitTimeline timeline(1000);
  const int64_t ms = ExitTimeline::kFirstBinNs;
  for (int64_t t = 0; t < 600; ++t) timeline.Add(At(1000 + t * ms, t % 3 == 0 ? &none : &tls));
  const nlohmann::json r = timeline.Record();
  EXPECT_EQ(r["bin_ns"], 4 * ms);  // 600 ms in at most 256 bins
  EXPECT_EQ(r["bins"], 150);
  const nlohmann::json& rows = r["exits_by_cause"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows["none"].size(), 150u);
  uint64_t sum_tls = 0, sum_none = 0;
  for (const auto& n : rows["descriptor_update"]) sum_tls += n.get<uint64_t>();
  for (const auto& n : rows["none"]) sum_none += n.get<uint64_t>();
  EXPECT_EQ(sum_tls, 400u);
  EXPECT_EQ(sum_none, 200u);
  // Bin 0 holds ms 0..3: exits 0 and 3 of no cause, 1 and 2 of the cause.
  EXPECT_EQ(rows["none"][0], 2);
  EXPECT_EQ(rows["descriptor_update"][0], 2);
}

TEST(ExitTimelineTest, AnExitWithoutASiteOrBeforeTheStartIsPlacedSoundly) {
  ExitSite site;
  ExitTimeline timeline(5000);
  timeline.Add(At(6000, nullptr));  // a run that records no sites
  timeline.Add(At(10, &site));      // a clock behind the start: bin 0
  const nlohmann::json r = timeline.Record();
  EXPECT_EQ(r["bins"], 1);
  EXPECT_EQ(r["exits_by_cause"]["none"], nlohmann::json::array({1}));
}

}  // namespace
}  // namespace minivmm::cli
