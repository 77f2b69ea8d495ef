// `minivmm report` of the records report_record_test.cc made: which figures
// and tables each page has. No KVM of its own: a page depends on its record
// only (tests/report/CMakeLists.txt).
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/common/command.h"
#include "tests/report/report_records.h"

namespace report_test {
namespace {

using ::minivmm::testing::Minivmm;
using ::minivmm::testing::Outcome;

std::string PagePath(const std::string& name) {
  return ::testing::TempDir() + "/report_page_" + std::to_string(getpid()) + "_" + name;
}

// The page of the record `name`, or "" (with a failure) when it cannot be made.
std::string Page(const char* name) {
  const std::string record = RecordPath(name);
  if (access(record.c_str(), R_OK) != 0) {
    ADD_FAILURE() << "no record " << record << ": the ReportRecord tests make it";
    return "";
  }
  const std::string page = PagePath(std::string(name) + ".html");
  const Outcome o = Minivmm("report " + record + " -o " + page);
  EXPECT_EQ(o.status, 0) << "status 3: no matplotlib (apt-get install python3-matplotlib)\n"
                         << o.out;
  return Slurp(page);
}

// The page's figure titles, in order; each figure is an embedded PNG.
std::vector<std::string> Figures(const std::string& html) {
  std::vector<std::string> titles;
  for (size_t at = html.find("<img alt=\""); at != std::string::npos;
       at = html.find("<img alt=\"", at + 1)) {
    const size_t from = at + 10;
    titles.push_back(html.substr(from, html.find('"', from) - from));
    EXPECT_EQ(html.compare(html.find("src=\"", from), 27, "src=\"data:image/png;base64,"), 0);
  }
  return titles;
}

bool Has(const std::vector<std::string>& figures, const std::string& title) {
  return std::find(figures.begin(), figures.end(), title) != figures.end();
}

TEST(ReportPage, ARecordWithSitesHasAFlameGraphAndExitsOverTime) {
  const std::vector<std::string> figures = Figures(Page(kSitesRecord));
  EXPECT_TRUE(Has(figures, "Exits by stack (flame graph)"));
  EXPECT_TRUE(Has(figures, "Exits over time, by cause"));
  EXPECT_FALSE(Has(figures, "Guest time per operation"));
}

// A record without sites: no flame graph and no timeline; the page names
// the vCPU count and has the exits per vCPU.
TEST(ReportPage, ARecordWithoutSitesHasNoFlameGraphButItsVcpus) {
  const std::string page = Page(kPlainRecord);
  const std::vector<std::string> figures = Figures(page);
  EXPECT_FALSE(figures.empty());
  EXPECT_FALSE(Has(figures, "Exits by stack (flame graph)"));
  EXPECT_FALSE(Has(figures, "Exits over time, by cause"));
  EXPECT_NE(page.find("<td>vCPUs</td><td>3</td>"), std::string::npos);
  EXPECT_NE(page.find("<h2>Exits per vCPU</h2>"), std::string::npos);
  EXPECT_NE(page.find("<th>vCPU 2</th>"), std::string::npos);
  EXPECT_NE(page.find("<td>hypercall vcpu_op</td><td>0</td><td>1</td><td>1</td><td>2</td>"),
            std::string::npos)
      << page.substr(std::min(page.size(), page.find("Exits per vCPU")), 2000);
}

TEST(ReportPage, ABenchRecordIsOneSelfContainedHtmlPage) {
  const std::string page = Page(kBenchRecord);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_GE(Figures(page).size(), 2u);
  EXPECT_EQ(page.find("src=\"http"), std::string::npos) << "the page must be self-contained";
}

}  // namespace
}  // namespace report_test
