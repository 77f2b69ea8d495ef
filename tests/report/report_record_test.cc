// The records whose pages report_page_test.cc checks, made by whole VMs on
// the KVM at hand (label vm), each checked for what its page depends on.
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/command.h"
#include "tests/report/report_records.h"

namespace report_test {
namespace {

using ::minivmm::testing::Minivmm;
using ::minivmm::testing::Outcome;
using nlohmann::json;

// The directory, made if missing; then the record at `name`, after `args`
// wrote it.
json Make(const std::string& args, const char* name) {
  ::minivmm::testing::Shell("mkdir -p " + RecordsDir());
  const std::string path = RecordPath(name);
  unlink(path.c_str());
  const Outcome o = Minivmm(args + " --json " + path);
  EXPECT_EQ(o.status, 0) << o.out;
  const json record = json::parse(Slurp(path), nullptr, false);
  EXPECT_FALSE(record.is_discarded()) << path;
  return record;
}

TEST(ReportRecord, ARunWithSites) {
  REQUIRE_KVM();
  const json r = Make("run -q --workload ctx --pvops naive --sites", kSitesRecord);
  EXPECT_TRUE(r.contains("sites"));
  EXPECT_TRUE(r.contains("timeline"));
}

TEST(ReportRecord, APlainRunOfThreeVcpus) {
  REQUIRE_KVM();
  const json r = Make("run -q --workload irq,loops=4 --cpus 3", kPlainRecord);
  EXPECT_FALSE(r.contains("sites"));
  EXPECT_FALSE(r.contains("timeline"));
  EXPECT_EQ(r["config"]["cpus"], 3);
  EXPECT_EQ(r["exits"]["per_vcpu"].size(), 3u);
}

TEST(ReportRecord, ATinyBench) {
  REQUIRE_KVM();
  const json r =
      Make("bench -q --workloads irq:loops=4:depth=2 --backend pv --repeat 1", kBenchRecord);
  EXPECT_FALSE(r["results"].empty());
  for (const json& run : r["runs"]) EXPECT_TRUE(run["ok"].get<bool>()) << run["failure"];
}

}  // namespace
}  // namespace report_test
