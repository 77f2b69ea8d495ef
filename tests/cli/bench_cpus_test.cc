// `minivmm bench --cpus N`, and `compare` and `report` with vCPU counts
// (README.md "Usage", docs/run-record.md): the bench runs every VM with N
// vCPUs and says so, its workload counts are those of one vCPU (the
// secondary CPUs' exits are in the baseline too), compare refuses records of
// different vCPU counts with exit status 2, report shows the count.
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "cli/exit_codes.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/command.h"

namespace {

using ::minivmm::testing::Minivmm;
using ::minivmm::testing::Outcome;
using nlohmann::json;

std::string Path(const std::string& name) {
  return ::testing::TempDir() + "/bench_cpus_" + std::to_string(getpid()) + "_" + name;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// irq with 4 loops of depth 2 under pv: 2 * 4 * 2 set_if exits all naive
// (docs/exit-model.md), whatever the vCPU count. Three configurations
// (naive, which always runs, optimized and Xen's baseline): what --cpus
// changes is the same for every one, and each costs a VM per run.
constexpr char kBench[] =
    "bench -q --workloads irq:loops=4:depth=2 --backend pv --repeat 1 "
    "--configurations optimized,xen";

// One bench with one vCPU and one with two, checked together: on the nested
// KVM every bench costs tens of seconds, and each test is a process.
TEST(BenchCpusTest, TwoVcpusEverywhereSameWorkloadCountsAndCompareRefusesOneVcpu) {
  REQUIRE_KVM();
  const Outcome one = Minivmm(std::string(kBench) + " --json " + Path("one.json"));
  const Outcome two = Minivmm(std::string(kBench) + " --cpus 2 --json " + Path("two.json") +
                              " --csv " + Path("two.csv"));
  ASSERT_EQ(one.status, 0) << one.out;
  ASSERT_EQ(two.status, 0) << two.out;

  // The output says so; with one vCPU it is unchanged.
  EXPECT_NE(two.out.find("backend=pv, 2 vCPUs: all naive -> all optimized"), std::string::npos)
      << two.out;
  EXPECT_EQ(one.out.find("vCPU"), std::string::npos) << "one vCPU: output unchanged\n" << one.out;

  // Every run had two vCPUs, and the record says so.
  const json a = json::parse(Slurp(Path("one.json")), nullptr, false);
  const json b = json::parse(Slurp(Path("two.json")), nullptr, false);
  ASSERT_FALSE(a.is_discarded() || b.is_discarded());
  EXPECT_EQ(a["settings"]["cpus"], 1);
  EXPECT_EQ(b["settings"]["cpus"], 2);
  ASSERT_FALSE(b["runs"].empty());
  for (const json& run : b["runs"]) {
    EXPECT_EQ(run["record"]["config"]["cpus"], 2);
    EXPECT_EQ(run["record"]["exits"]["per_vcpu"].size(), 2u);
    EXPECT_TRUE(run["ok"].get<bool>()) << run["failure"];
  }

  // The workload's counts are one vCPU's: the baselines carry the same
  // secondary-CPU exits.
  ASSERT_EQ(a["results"].size(), b["results"].size());
  EXPECT_EQ(b["results"].size(), 3u);
  for (size_t i = 0; i < a["results"].size(); ++i) {
    const json& x = a["results"][i];
    const json& y = b["results"][i];
    SCOPED_TRACE(x["configuration"].get<std::string>());
    ASSERT_EQ(x["configuration"], y["configuration"]);
    for (const char* metric : {"exits.total", "exits.if_set", "exits.if_clear", "wasted.total"})
      EXPECT_EQ(x["metrics"][metric]["median"], y["metrics"][metric]["median"]) << metric;
    if (x["configuration"] == "naive") {
      EXPECT_EQ(y["metrics"]["exits.total"]["median"], 2 * 4 * 2);
    }
  }

  // The CSV's last column.
  std::istringstream csv(Slurp(Path("two.csv")));
  std::string line;
  ASSERT_TRUE(std::getline(csv, line));
  EXPECT_EQ(line.substr(line.rfind(',') + 1), "cpus") << line;
  int rows = 0;
  while (std::getline(csv, line)) {
    ++rows;
    EXPECT_EQ(line.substr(line.rfind(',') + 1), "2") << line;
  }
  EXPECT_GT(rows, 0);

  // compare: one message and status 2 for different counts, the count first
  // for equal ones.
  Outcome o = Minivmm("compare " + Path("one.json") + " " + Path("two.json"));
  EXPECT_EQ(o.status, ::minivmm::cli::kCompareTrouble) << o.out;
  EXPECT_NE(o.out.find("A ran with 1 vCPU and B with 2 vCPUs: records of different vCPU counts "
                       "are not compared"),
            std::string::npos)
      << o.out;
  Outcome same =
      Minivmm("compare --fail-on-regression " + Path("two.json") + " " + Path("two.json"));
  EXPECT_EQ(same.status, 0) << same.out;
  EXPECT_NE(same.out.find("2 vCPUs in every run of A and B"), std::string::npos) << same.out;
}

TEST(CompareCpusTest, RunRecordsOfDifferentVcpuCountsAreTroubleInEitherOrder) {
  REQUIRE_KVM();
  const std::string run = "run -q --workload irq,loops=4 --json ";
  ASSERT_EQ(Minivmm(run + Path("run1.json")).status, 0);
  ASSERT_EQ(Minivmm(run + Path("run3.json") + " --cpus 3").status, 0);
  for (const auto& [a, b] : {std::pair{"run1.json", "run3.json"}, {"run3.json", "run1.json"}}) {
    Outcome o = Minivmm("compare --fail-on-regression " + Path(a) + " " + Path(b));
    EXPECT_EQ(o.status, ::minivmm::cli::kCompareTrouble) << o.out;
    EXPECT_NE(o.out.find("records of different vCPU counts are not compared"), std::string::npos)
        << o.out;
    EXPECT_EQ(o.out.find("metrics compared"), std::string::npos) << "nothing compared\n" << o.out;
  }
  Outcome same = Minivmm("compare " + Path("run3.json") + " " + Path("run3.json"));
  EXPECT_EQ(same.status, 0) << same.out;
  EXPECT_NE(same.out.find("3 vCPUs in every run of A and B"), std::string::npos) << same.out;
}

TEST(BenchCpusUsageTest, CpuCountOutsideOneTo32IsUsageError) {
  for (const char* cpus : {"0", "33", "two"}) {
    Outcome o = Minivmm(std::string("bench --cpus ") + cpus);
    EXPECT_EQ(o.status, ::minivmm::cli::kExitUsage) << cpus << "\n" << o.out;
    EXPECT_NE(o.out.find("--cpus"), std::string::npos) << o.out;
  }
}

}  // namespace
