// `minivmm bench`, `compare` and `report` end to end, with tiny workloads
// and --repeat 1 so that the whole file runs in seconds.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/bench_plan.h"
#include "cli/exit_codes.h"
#include "cli/experiment.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/command.h"

namespace {

using nlohmann::json;

using ::minivmm::testing::Outcome;
using ::minivmm::testing::Shell;

using ::minivmm::testing::Minivmm;

// Per process: ctest may run the tests of this file in parallel processes.
std::string Path(const std::string& name) {
  return ::testing::TempDir() + "/bench_cli_" + std::to_string(getpid()) + "_" + name;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

json ReadJson(const std::string& path) { return json::parse(Slurp(path), nullptr, false); }

void WriteJson(const std::string& path, const json& j) { std::ofstream(path) << j.dump(1); }

// irq with L loops of depth d under pv: set_if exits are 2 L d with
// irq_restore naive and L d + L optimized (docs/exit-model.md).
constexpr int kLoops = 4, kDepth = 2;
const char kBenchArgs[] = "bench -q --workloads irq:loops=4:depth=2 --backend pv --repeat 1";

const json* Result(const json& bench, const std::string& configuration) {
  for (const json& r : bench["results"]) {
    if (r["configuration"] == configuration) return &r;
  }
  return nullptr;
}

// One tiny bench shared by the tests that only read its output. Under ctest
// it is run once, by SharedBench.RunsTheTinyBench (the fixture setup
// bench_cli_shared, tests/cli/CMakeLists.txt), into SharedDir(); each
// BenchCliTest is a process of its own there and reads what it left
// (MINIVMM_SHARED_BENCH=1). Run by hand, the binary runs it once itself.
std::string SharedDir() { return ::testing::TempDir() + "/bench_cli_shared"; }
std::string SharedPath(const std::string& name) { return SharedDir() + "/" + name; }

Outcome RunTheTinyBench() {
  return Minivmm(std::string(kBenchArgs) + " --json " + SharedPath("bench.json") + " --csv " +
                 SharedPath("bench.csv"));
}

TEST(SharedBench, RunsTheTinyBench) {
  REQUIRE_KVM();
  Shell("rm -rf " + SharedDir());
  ASSERT_EQ(mkdir(SharedDir().c_str(), 0755), 0) << SharedDir();
  const Outcome o = RunTheTinyBench();
  std::ofstream(SharedPath("out.txt")) << o.out;
  std::ofstream(SharedPath("status")) << o.status;
  EXPECT_EQ(o.status, 0) << o.out;
}

class BenchCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!::minivmm::testing::HaveKvmDevice()) return;
    const char* shared = getenv("MINIVMM_SHARED_BENCH");
    if (shared != nullptr && std::string(shared) == "1") {
      // The fixture's status file is written last: without it the setup never ran.
      std::ifstream status(SharedPath("status"));
      int value = -1;
      status >> value;
      outcome_ = new Outcome{status ? value : -1, Slurp(SharedPath("out.txt"))};
      return;
    }
    Shell("rm -rf " + SharedDir());
    mkdir(SharedDir().c_str(), 0755);
    outcome_ = new Outcome(RunTheTinyBench());
  }
  static void TearDownTestSuite() { delete outcome_; }
  static Outcome* outcome_;
};
Outcome* BenchCliTest::outcome_ = nullptr;

TEST_F(BenchCliTest, TinyBenchExitsZeroAndPrintsTables) {
  REQUIRE_KVM();
  ASSERT_EQ(outcome_->status, 0) << outcome_->out;
  EXPECT_NE(outcome_->out.find("all naive -> all optimized"), std::string::npos) << outcome_->out;
  EXPECT_NE(outcome_->out.find("exits per restore"), std::string::npos) << outcome_->out;
  EXPECT_NE(outcome_->out.find("wasted exits (changed nothing)"), std::string::npos)
      << outcome_->out;
}

TEST_F(BenchCliTest, JsonHasSchemaResultsAndEveryRawRun) {
  REQUIRE_KVM();
  json bench = ReadJson(SharedPath("bench.json"));
  ASSERT_FALSE(bench.is_discarded());
  EXPECT_EQ(bench["schema"], "minivmm.bench");
  EXPECT_EQ(bench["schema_version"], 2);
  EXPECT_TRUE(bench["provenance"].contains("guest_image"));
  // One result per bench configuration (cli/experiment.h; all apply under
  // pv), and a baseline and a run for each.
  const size_t configurations = minivmm::cli::BenchConfigurations().size();
  EXPECT_EQ(bench["results"].size(), configurations);
  EXPECT_EQ(bench["runs"].size(), 2 * configurations);
  // What is timed is the uncounted kernel (guest/README.md "The uncounted
  // kernel"): every run's guest says so and carries no counter.
  EXPECT_EQ(bench["settings"]["guest_counters"], false);
  for (const json& run : bench["runs"]) {
    EXPECT_TRUE(run["ok"].get<bool>());
    EXPECT_EQ(run["record"]["schema"], "minivmm.run");
    const json& reports = run["record"]["guest"]["reports"];
    EXPECT_EQ(reports["kernel.counters"], 0);
    EXPECT_FALSE(reports.contains("kernel.switches"));
    EXPECT_FALSE(reports.contains("kernel.hc_exits.set_if"));
  }
}

TEST_F(BenchCliTest, WorkloadExitsAreExactAfterBaselineSubtraction) {
  REQUIRE_KVM();
  json bench = ReadJson(SharedPath("bench.json"));
  ASSERT_FALSE(bench.is_discarded());
  const json* naive = Result(bench, "naive");
  const json* restore = Result(bench, "irq_restore");
  ASSERT_NE(naive, nullptr);
  ASSERT_NE(restore, nullptr);
  EXPECT_EQ((*naive)["metrics"]["exits.total"]["median"], 2 * kLoops * kDepth);
  EXPECT_EQ((*restore)["metrics"]["exits.total"]["median"], kLoops * kDepth + kLoops);
  EXPECT_EQ((*naive)["metrics"]["exits_per_op"]["median"], 2.0);
}

// The seed table's exit figures are exact: under all naive the conditional
// restore saves (d - 1) / d exits per restore; under Xen's baseline (the
// interrupt flag in shared memory) none. And the exits it removes are the
// wasted IF-clear exits that disappear (docs/wasted-exits.md).
TEST_F(BenchCliTest, SeedTableAndWastedExitsAreExact) {
  REQUIRE_KVM();
  EXPECT_NE(outcome_->out.find("conditional irq_restore: irq restore (AIM7 proxy)"),
            std::string::npos)
      << outcome_->out;
  EXPECT_NE(
      outcome_->out.find("exit-cost model: one bare exit (a null `out`, nothing around it) costs"),
      std::string::npos);
  json bench = ReadJson(SharedPath("bench.json"));
  ASSERT_FALSE(bench.is_discarded());
  std::map<std::string, double> saved;
  for (const json& s : bench["seeds"]) {
    if (s["op"] != "irq_restore") continue;
    saved[s["baseline"].get<std::string>()] = s["exits_saved_per_unit"].get<double>();
  }
  ASSERT_EQ(saved.size(), 2u) << bench["seeds"].dump();
  EXPECT_EQ(saved["naive"], static_cast<double>(kDepth - 1) / kDepth);
  EXPECT_EQ(saved["xen"], 0.0);
  const json* naive = Result(bench, "naive");
  const json* restore = Result(bench, "irq_restore");
  ASSERT_NE(naive, nullptr);
  ASSERT_NE(restore, nullptr);
  auto median = [](const json* r, const char* metric) {
    return (*r)["metrics"][metric]["median"].get<double>();
  };
  EXPECT_EQ(median(naive, "exits.if_clear") - median(restore, "exits.if_clear"),
            median(naive, "wasted.if_clear") - median(restore, "wasted.if_clear"));
  EXPECT_EQ(median(naive, "exits.if_clear") - median(restore, "exits.if_clear"),
            kLoops * (kDepth - 1));
}

// The exit cost that turns every saved exit into time (the bench's
// exit_cost.guest_tsc_per_exit: workload=exitcost's exitcost.tsc_net_per_op,
// guest TSC around a loop of null hypercalls, net of an empty loop) against
// the same round trip measured from outside: the null-hypercall tiny guest
// (tests/tiny_guests/null_hypercalls.S, the guest of bench/null_hypercall.cc),
// its wall time per exit in the host's clock, in guest TSC cycles. The two
// are run in turn, three times each, and their medians compared, so that a
// change in the host's load (this is a shared machine) moves both. Not a
// timing assertion but one of units and of what is measured: the two must
// be of the same order of magnitude, within a factor of 4 either way: both
// are a bare `out` and a few loop instructions (workload=exitcost's bare
// loop counts its calls after the loop), so they differ by what the two
// clocks see around the exit. A figure in the wrong unit (ns or ms for
// cycles), of the wrong loop (the empty loop, the counted wrapper, which
// costs some 4 times the bare exit where ring 0 is emulated, or the whole
// loop at once), or missing the net subtraction falls outside it.
TEST_F(BenchCliTest, ExitCostIsTheOrderOfTheNullHypercallRoundTrip) {
  REQUIRE_KVM();
  json bench = ReadJson(SharedPath("bench.json"));
  ASSERT_FALSE(bench.is_discarded());
  EXPECT_EQ(bench["exit_cost"]["workload"], "exitcost");
  EXPECT_GT(bench["exit_cost"]["guest_tsc_per_exit"]["median"].get<double>(), 0);
  std::vector<double> inside, outside;
  for (int i = 0; i < 3; ++i) {
    const std::string record = Path("exit_cost.json");
    Outcome o = Minivmm("run -q --workload exitcost --json " + record);
    ASSERT_EQ(o.status, 0) << o.out;
    json r = ReadJson(record);
    ASSERT_FALSE(r.is_discarded());
    const json& reports = r["guest"]["reports"];
    ASSERT_TRUE(reports.contains("exitcost.tsc_net_per_op")) << reports.dump();
    inside.push_back(reports["exitcost.tsc_net_per_op"].get<double>());

    o = Minivmm("run -q --kernel " + std::string(MINIVMM_TINY_GUEST_DIR) +
                "/null_hypercalls_20k.elf --json " + record);
    ASSERT_EQ(o.status, 0) << o.out;
    r = ReadJson(record);
    ASSERT_FALSE(r.is_discarded());
    const double ns = r["result"]["elapsed_ns"].get<double>();
    const double khz = r["result"]["guest_tsc_khz"].get<double>();
    const double exits = r["exits"]["total"].get<double>();
    ASSERT_GE(exits, 20000);
    ASSERT_GT(khz, 0);
    outside.push_back(ns * khz / 1e6 / exits);
  }
  std::sort(inside.begin(), inside.end());
  std::sort(outside.begin(), outside.end());
  const double cost = inside[1], round_trip = outside[1];
  EXPECT_GT(cost, round_trip / 4) << "exit cost " << cost << " TSC, round trip " << round_trip;
  EXPECT_LT(cost, round_trip * 4) << "exit cost " << cost << " TSC, round trip " << round_trip;
}

TEST_F(BenchCliTest, CsvHasHeaderAndOneRowPerMetric) {
  REQUIRE_KVM();
  std::istringstream csv(Slurp(SharedPath("bench.csv")));
  std::string line;
  ASSERT_TRUE(std::getline(csv, line));
  EXPECT_EQ(line.rfind("workload,workload_spec,backend,configuration,", 0), 0u) << line;
  int rows = 0, exits_rows = 0;
  while (std::getline(csv, line)) {
    ++rows;
    if (line.find(",exits.total,") != std::string::npos) ++exits_rows;
  }
  // One exits.total row per configuration (the bench is under pv: all of them).
  const int configurations = static_cast<int>(minivmm::cli::BenchConfigurations().size());
  EXPECT_EQ(exits_rows, configurations);
  EXPECT_GT(rows, configurations * 5);
}

TEST_F(BenchCliTest, CompareBenchWithItselfShowsNoChange) {
  REQUIRE_KVM();
  Outcome o = Minivmm("compare --fail-on-regression " + SharedPath("bench.json") + " " +
                      SharedPath("bench.json"));
  EXPECT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("0 better, 0 worse"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("wasted A"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("regression:"), std::string::npos) << o.out;
}

TEST_F(BenchCliTest, CompareBenchFailsOnMoreExits) {
  REQUIRE_KVM();
  json bench = ReadJson(SharedPath("bench.json"));
  ASSERT_FALSE(bench.is_discarded());
  for (json& r : bench["results"]) {
    if (r["configuration"] != "optimized") continue;
    json& m = r["metrics"]["exits.if_set"];
    m["values"] = {m["median"].get<double>() + 3};
  }
  WriteJson(Path("bench_worse.json"), bench);
  Outcome o = Minivmm("compare --fail-on-regression " + SharedPath("bench.json") + " " +
                      Path("bench_worse.json"));
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("regression: irq"), std::string::npos) << o.out;
  // The other way round it is an improvement.
  EXPECT_EQ(Minivmm("compare --fail-on-regression " + Path("bench_worse.json") + " " +
                    SharedPath("bench.json"))
                .status,
            0);
}

TEST(CompareTest, RunWithItselfShowsNoChangeAndExitsZero) {
  REQUIRE_KVM();
  ASSERT_EQ(Minivmm("run -q --workload irq,loops=4 --json " + Path("run.json")).status, 0);
  Outcome o = Minivmm("compare --fail-on-regression " + Path("run.json") + " " + Path("run.json"));
  EXPECT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("0 better, 0 worse"), std::string::npos) << o.out;
}

TEST(CompareTest, RunWithMoreIfClearExitsIsARegression) {
  REQUIRE_KVM();
  ASSERT_EQ(Minivmm("run -q --workload irq,loops=4 --json " + Path("run_a.json")).status, 0);
  json run = ReadJson(Path("run_a.json"));
  ASSERT_FALSE(run.is_discarded());
  run["causes"]["causes"]["if_clear"]["exits"] =
      run["causes"]["causes"]["if_clear"]["exits"].get<int>() + 5;
  run["exits"]["total"] = run["exits"]["total"].get<int>() + 5;
  WriteJson(Path("run_b.json"), run);
  std::string ab = Path("run_a.json") + " " + Path("run_b.json");
  Outcome o = Minivmm("compare --fail-on-regression " + ab);
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("IF clear"), std::string::npos) << o.out;
  EXPECT_EQ(Minivmm("compare " + ab).status, 0) << "without --fail-on-regression";
}

// Run schema version 2 stores integer guest reports as JSON numbers; a
// record of version 1 (every report a string) still compares, equal.
TEST(CompareTest, RunRecordWithNumericReportsMatchesItsVersion1Form) {
  REQUIRE_KVM();
  ASSERT_EQ(Minivmm("run -q --workload irq,loops=4 --json " + Path("run_v2.json")).status, 0);
  json run = ReadJson(Path("run_v2.json"));
  ASSERT_FALSE(run.is_discarded());
  EXPECT_EQ(run["schema_version"], 2);
  const json& reports = run["guest"]["reports"];
  EXPECT_TRUE(reports["irq.restores"].is_number_integer()) << reports.dump();
  EXPECT_EQ(reports["irq.restores"], 8);  // loops=4 x the default depth 2
  EXPECT_TRUE(reports["config.backend"].is_string()) << reports.dump();
  json old = run;
  old["schema_version"] = 1;
  for (auto& [key, value] : old["guest"]["reports"].items()) {
    if (!value.is_string()) value = value.dump();
  }
  WriteJson(Path("run_v1.json"), old);
  for (const char* order : {"run_v1.json run_v2.json", "run_v2.json run_v1.json"}) {
    std::string files = std::string(order);
    Outcome o = Minivmm("compare --fail-on-regression " + Path(files.substr(0, files.find(' '))) +
                        " " + Path(files.substr(files.find(' ') + 1)));
    EXPECT_EQ(o.status, 0) << o.out;
    EXPECT_NE(o.out.find("0 better, 0 worse"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("restore"), std::string::npos) << o.out;
  }
}

TEST(CompareTest, MissingFileIsTrouble) {
  EXPECT_EQ(Minivmm("compare /nonexistent/a.json /nonexistent/b.json").status, 2);
}

TEST(CompareTest, NotARecordIsTrouble) {
  std::ofstream(Path("not_a_record.json")) << "{\"hello\": 1}";
  EXPECT_EQ(
      Minivmm("compare " + Path("not_a_record.json") + " " + Path("not_a_record.json")).status, 2);
}

// --configurations runs the named configurations and their references
// (naive always, xen for a xen+<op>), in the list's order, and nothing else:
// fpu with K kernel threads and N rounds switches K N + K + 1 times, each a
// stack_switch under sp0:naive (all naive) and none under sp0:optimized
// (docs/exit-model.md "7.").
TEST(BenchConfigurationsTest, OnlyTheNamedConfigurationsAndTheirReferencesRun) {
  REQUIRE_KVM();
  const uint64_t k = 2, n = 3;
  const std::string json_path = Path("configurations.json");
  Outcome o = Minivmm(
      "bench -q --workloads fpu:threads=2:rounds=3 --backend pv --repeat 1 "
      "--configurations xen+tls,sp0 --json " +
      json_path);
  ASSERT_EQ(o.status, 0) << o.out;
  json bench = ReadJson(json_path);
  ASSERT_FALSE(bench.is_discarded());
  std::vector<std::string> names;
  for (const json& c : bench["settings"]["configurations"]) names.push_back(c["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"naive", "sp0", "xen", "xen+tls"}));
  // A baseline and one run of fpu per configuration.
  EXPECT_EQ(bench["runs"].size(), 2 * names.size());
  std::map<std::string, double> sp0_exits;
  for (const json& r : bench["results"])
    sp0_exits[r["configuration"]] = r["metrics"]["exits.sp0_load"]["median"].get<double>();
  EXPECT_EQ(sp0_exits.size(), names.size());
  EXPECT_EQ(sp0_exits["naive"], k * n + k + 1);
  EXPECT_EQ(sp0_exits["sp0"], 0);
  // The tables compare each with all naive; without optimized there is no
  // naive -> optimized table.
  EXPECT_NE(o.out.find("one op changed at a time, against all naive"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("all naive -> all optimized"), std::string::npos) << o.out;
}

// A name that is no configuration is a usage error before any VM runs: one
// line naming it and the known ones, and no record.
TEST(BenchConfigurationsTest, AnUnknownNameIsAUsageErrorBeforeAnythingRuns) {
  const std::string json_path = Path("no_configurations.json");
  Outcome o = Minivmm("bench -q --configurations sp0,nope --json " + json_path);
  EXPECT_EQ(o.status, 2) << o.out;
  EXPECT_EQ(
      o.out, "minivmm bench: --configurations: unknown configuration 'nope' (known: " + [] {
        std::string known;
        for (const auto& c : minivmm::cli::BenchConfigurations())
          known += (known.empty() ? "" : ", ") + c.name;
        return known;
      }() + ")\n");
  EXPECT_NE(access(json_path.c_str(), F_OK), 0) << "no record for a refused bench";
}

TEST(BenchTest, BadBackendIsUsageError) { EXPECT_EQ(Minivmm("bench --backend xen").status, 2); }

// A signal can fail the system call it interrupts (KVM_CREATE_VM returns
// EINTR when SIGINT comes while a VM is being made, as seen on the nested
// kvm_amd): a VMM error that comes with a stop signal is the signal's stop
// (130, "stopped by SIGINT"), and without one it stays a VMM error. A
// missing guest image makes the error here, before any KVM call.
TEST(BenchStopUnitTest, AVmmErrorThatComesWithASignalIsTheSignalsStop) {
  for (const bool signalled : {true, false}) {
    minivmm::cli::BenchSettings settings;
    settings.workloads = "irq";
    settings.backend = "pv";
    settings.kernel = "/nonexistent/minivmm-guest.elf";
    minivmm::cli::BenchMatrix matrix(settings);
    matrix.Prepare(/*probe_host=*/false);
    int asked = 0;
    minivmm::cli::BenchHooks hooks;
    // No signal before the first VM; then SIGINT, when `signalled`.
    hooks.stop_signal = [&] { return ++asked > 1 && signalled ? SIGINT : 0; };
    matrix.Run(hooks);
    EXPECT_TRUE(matrix.runs().empty());
    if (signalled) {
      EXPECT_EQ(matrix.stop_why(), "stopped by SIGINT");
      EXPECT_EQ(matrix.stop_status(), minivmm::cli::kExitSigint);
    } else {
      EXPECT_NE(matrix.stop_why().find("workload=exitcost failed"), std::string::npos)
          << matrix.stop_why();
      EXPECT_EQ(matrix.stop_status(), minivmm::cli::kExitVmmError);
    }
  }
}

// --guest-counters picks between the built-in guest's two kernels: with
// another --kernel it means nothing, and is a usage error.
TEST(BenchTest, GuestCountersWithAnotherKernelIsUsageError) {
  for (const char* command : {"bench", "run"}) {
    const Outcome o =
        Minivmm(std::string(command) + " --kernel " + std::string(MINIVMM_TINY_GUEST_DIR) +
                "/null_hypercalls_20k.elf --guest-counters on");
    EXPECT_EQ(o.status, 2) << command << ": " << o.out;
    EXPECT_NE(o.out.find("--kernel excludes --guest-counters"), std::string::npos) << o.out;
  }
}

TEST(BenchTest, FailingGuestMakesBenchExitNonZero) {
  REQUIRE_KVM();
  // The fault workload ends every run with an unhandled exception (code 3).
  Outcome o = Minivmm("bench -q --workloads fault --backend native --repeat 1");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("FAILED"), std::string::npos) << o.out;
}

// Refused before any Python starts, and nothing is written.
TEST(ReportTest, UnknownRecordIsUsageError) {
  std::ofstream(Path("not_a_record.json")) << "{\"hello\": 1}";
  std::ofstream(Path("not_json.json")) << "{\"hello\": ";
  for (const char* record : {"not_a_record.json", "not_json.json"}) {
    Outcome o = Minivmm("report " + Path(record) + " -o " + Path("x.html"));
    EXPECT_EQ(o.status, 2) << o.out;
    EXPECT_NE(o.out.find("minivmm report: " + Path(record)), std::string::npos) << o.out;
    EXPECT_NE(access(Path("x.html").c_str(), F_OK), 0) << "a page for a bad record";
  }
}

}  // namespace
