#include <gtest/gtest.h>

#include <string>

#include "tests/hypercalls/expect.h"

namespace minivmm {
namespace {

using testing::CheckedVm;
using testing::kRamSize;

class ReportTest : public ::testing::Test {
 protected:
  HypercallResult ReportResult(std::string_view text) {
    vm_.PokeBytes(0x8000, text);
    return vm_.Result(MVMM_HC_report, 0x8000, text.size());
  }
  int64_t Report(std::string_view text) { return ReportResult(text).value; }
  CheckedVm vm_;
};

TEST_F(ReportTest, AppendsEntriesAndReturnsTheirNumber) {
  const HypercallResult result = ReportResult("backend=pv\nworkload=hello\n");
  EXPECT_EQ(testing::AbiRow(result.value, "report.ok"), 2);
  EXPECT_EQ(result.refusal, nullptr);
  ASSERT_EQ(vm_.reports.entries.size(), 2u);
  EXPECT_EQ(vm_.reports.entries[0], (std::pair<std::string, std::string>{"backend", "pv"}));
  EXPECT_EQ(vm_.reports.entries[1], (std::pair<std::string, std::string>{"workload", "hello"}));
  EXPECT_EQ(vm_.reports.bytes, 7u + 2 + 8 + 5 + 2 * GuestReports::kEntryOverheadBytes);
}

TEST_F(ReportTest, RecordsAccumulateInOrder) {
  EXPECT_EQ(Report("a=1"), 1);
  EXPECT_EQ(Report("b=2\nc=3"), 2);
  ASSERT_EQ(vm_.reports.entries.size(), 3u);
  EXPECT_EQ(vm_.reports.entries[2].first, "c");
}

TEST_F(ReportTest, EmptyRecordReturnsZero) {
  EXPECT_EQ(vm_.Call(MVMM_HC_report, kRamSize, 0), 0);
  EXPECT_TRUE(vm_.reports.entries.empty());
}

TEST_F(ReportTest, NoStoreIsEnosys) {
  vm_.env.reports = nullptr;
  const HypercallResult result = ReportResult("a=1");
  EXPECT_EQ(testing::AbiRow(result.value, "report.ENOSYS"), -MVMM_ENOSYS);
  EXPECT_STREQ(result.refusal, "no report store wired");
}

TEST_F(ReportTest, OverMaximumLengthIsE2big) {
  const HypercallResult result = vm_.Result(MVMM_HC_report, 0x8000, MVMM_REPORT_MAX_BYTES + 1);
  EXPECT_EQ(testing::AbiRow(result.value, "report.E2BIG"), -MVMM_E2BIG);
  EXPECT_STREQ(result.refusal, "len above MVMM_REPORT_MAX_BYTES");
  EXPECT_EQ(vm_.Call(MVMM_HC_report, 0x8000, ~0ull), -MVMM_E2BIG);
}

TEST_F(ReportTest, MaximumLengthIsAccepted) {
  std::string text(MVMM_REPORT_MAX_BYTES, 'x');
  text[0] = 'k';
  text[1] = '=';
  EXPECT_EQ(Report(text), 1);
}

TEST_F(ReportTest, OutsideRamIsEfault) {
  const HypercallResult result = vm_.Result(MVMM_HC_report, kRamSize - 2, 3);
  EXPECT_EQ(testing::AbiRow(result.value, "report.EFAULT"), -MVMM_EFAULT);
  EXPECT_STREQ(result.refusal, "text outside RAM");
  EXPECT_EQ(vm_.Call(MVMM_HC_report, ~0ull, 2), -MVMM_EFAULT);
}

TEST_F(ReportTest, BadRecordIsEinvalAndAppendsNothing) {
  const HypercallResult result = ReportResult("good=1\nbad line\n");
  EXPECT_EQ(testing::AbiRow(result.value, "report.EINVAL"), -MVMM_EINVAL);
  EXPECT_STREQ(result.refusal, "report line is not key=value");
  EXPECT_STREQ(ReportResult("k=\xC0\x80").refusal, "report is not valid UTF-8");
  EXPECT_EQ(Report("k=\xC0\x80"), -MVMM_EINVAL);
  EXPECT_EQ(Report("bad key=1"), -MVMM_EINVAL);
  EXPECT_TRUE(vm_.reports.entries.empty());
  EXPECT_EQ(vm_.reports.bytes, 0u);
}

TEST_F(ReportTest, FullStoreIsE2bigAndAppendsNothing) {
  // Each entry costs its key and value plus a fixed host overhead.
  vm_.reports.bytes = GuestReports::kMaxBytes - 3 - GuestReports::kEntryOverheadBytes;
  const HypercallResult result = ReportResult("ab=cd");
  EXPECT_EQ(testing::AbiRow(result.value, "report.E2BIG.2"), -MVMM_E2BIG);
  EXPECT_STREQ(result.refusal, "report store full");
  EXPECT_TRUE(vm_.reports.entries.empty());
  EXPECT_EQ(Report("a=bc"), 1);  // exactly fills the store
  EXPECT_EQ(vm_.reports.bytes, GuestReports::kMaxBytes);
  EXPECT_EQ(Report("x="), -MVMM_E2BIG);  // one more byte does not fit
  EXPECT_EQ(Report("\n"), 0);            // nothing to store still fits
}

TEST_F(ReportTest, ManyEmptyValuesCannotExceedTheStoreBound) {
  // `a=` lines cost the guest 3 bytes each but the host far more: the
  // per-entry overhead bounds the number of entries, not just their bytes.
  std::string text;
  for (int i = 0; i < 4000; ++i) text += "a=\n";
  int64_t stored = 0;
  for (int i = 0; i < 1000; ++i) {
    int64_t r = Report(text);
    if (r < 0) {
      EXPECT_EQ(r, -MVMM_E2BIG);
      break;
    }
    stored += r;
  }
  EXPECT_LE(vm_.reports.bytes, GuestReports::kMaxBytes);
  EXPECT_LE(static_cast<size_t>(stored),
            GuestReports::kMaxBytes / GuestReports::kEntryOverheadBytes);
}

}  // namespace
}  // namespace minivmm
