// `minivmm run --sites --stacks FILE` (docs/sites.md): the exit table's
// "exits by site" section, the record's `sites` and the folded stacks, which
// add up to the run's exits exactly.
#include <unistd.h>

#include <fstream>
#include <map>
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
  return ::testing::TempDir() + "/sites_cli_" + std::to_string(getpid()) + "_" + name;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SitesCliTest, SitesTableRecordAndFoldedStacksAddUpToTheExits) {
  REQUIRE_KVM();
  const Outcome o = Minivmm("run --workload ctx,tls=same --pvops naive --wasted --sites --stacks " +
                            Path("stacks.txt") + " --json " + Path("run.json"));
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("exits by site"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("wasted exits by site"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("keep a shadow of what was sent and skip unchanged values"),
            std::string::npos);
  EXPECT_NE(o.out.find("the operation is undone before anything used it: drop both"),
            std::string::npos);
  EXPECT_NE(o.out.find("<- LoadTls switch.cc:"), std::string::npos) << o.out;

  const json record = json::parse(Slurp(Path("run.json")), nullptr, false);
  ASSERT_FALSE(record.is_discarded());
  ASSERT_TRUE(record.contains("sites"));
  EXPECT_EQ(record["sites"]["wasted_unplaced"], 0);
  uint64_t record_exits = 0;
  for (const json& stack : record["sites"]["stacks"])
    record_exits += stack["exits"].get<uint64_t>();
  EXPECT_EQ(record_exits, record["exits"]["total"].get<uint64_t>());

  // Folded: "cause;root;...;leaf count", root first, the cause as the root.
  std::istringstream folded(Slurp(Path("stacks.txt")));
  uint64_t folded_exits = 0, load_tls = 0;
  std::string line;
  while (std::getline(folded, line)) {
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    const uint64_t n = std::stoull(line.substr(space + 1));
    folded_exits += n;
    if (line.rfind("descriptor_update;", 0) == 0) {
      EXPECT_NE(line.find(";LoadTls;"), std::string::npos) << line;
      EXPECT_NE(line.find(";RawHypercall "), std::string::npos) << "the leaf is the exit: " << line;
      load_tls += n;
    }
  }
  EXPECT_EQ(folded_exits, record_exits);
  EXPECT_GT(load_tls, 0u);
}

TEST(SitesCliTest, AnUnwritableStacksFileIsAVmmError) {
  REQUIRE_KVM();
  const Outcome o = Minivmm("run -q --workload hello --stacks /nonexistent/dir/stacks.txt");
  EXPECT_EQ(o.status, minivmm::cli::kExitVmmError) << o.out;
  EXPECT_NE(o.out.find("cannot write /nonexistent/dir/stacks.txt"), std::string::npos) << o.out;
}

}  // namespace
