// Where the ReportRecord tests leave their records for the ReportPage tests
// (tests/report/CMakeLists.txt): $MINIVMM_REPORT_RECORDS, else a directory
// in gtest's TempDir().
#ifndef MINIVMM_TESTS_REPORT_REPORT_RECORDS_H_
#define MINIVMM_TESTS_REPORT_REPORT_RECORDS_H_

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace report_test {

inline std::string RecordsDir() {
  const char* dir = std::getenv("MINIVMM_REPORT_RECORDS");
  if (dir != nullptr && *dir != '\0') return dir;
  return ::testing::TempDir() + "/report_records";
}

inline std::string RecordPath(const std::string& name) { return RecordsDir() + "/" + name; }

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The records, each with the test that makes it.
inline constexpr char kSitesRecord[] = "sites.json";  // ReportRecord.ARunWithSites
inline constexpr char kPlainRecord[] = "plain.json";  // ReportRecord.APlainRunOfThreeVcpus
inline constexpr char kBenchRecord[] = "bench.json";  // ReportRecord.ATinyBench

}  // namespace report_test

#endif  // MINIVMM_TESTS_REPORT_REPORT_RECORDS_H_
