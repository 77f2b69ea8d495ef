#include "hypercalls/report_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace minivmm {
namespace {

using namespace std::string_literals;

TEST(Utf8Test, AcceptsWellFormedText) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii\n"));
  EXPECT_TRUE(IsValidUtf8("\xC2\x80"));          // U+0080
  EXPECT_TRUE(IsValidUtf8("\xDF\xBF"));          // U+07FF
  EXPECT_TRUE(IsValidUtf8("\xE0\xA0\x80"));      // U+0800
  EXPECT_TRUE(IsValidUtf8("\xED\x9F\xBF"));      // U+D7FF
  EXPECT_TRUE(IsValidUtf8("\xEE\x80\x80"));      // U+E000
  EXPECT_TRUE(IsValidUtf8("\xEF\xBF\xBF"));      // U+FFFF
  EXPECT_TRUE(IsValidUtf8("\xF0\x90\x80\x80"));  // U+10000
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF
  EXPECT_TRUE(IsValidUtf8("\x00"s));             // NUL is valid UTF-8
  EXPECT_TRUE(IsValidUtf8("µs=3 → ok"));
}

TEST(Utf8Test, RefusesMalformedText) {
  EXPECT_FALSE(IsValidUtf8("\x80"));              // lone continuation
  EXPECT_FALSE(IsValidUtf8("\xC0\x80"));          // overlong NUL
  EXPECT_FALSE(IsValidUtf8("\xC1\xBF"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xE0\x9F\xBF"));      // overlong 3-byte
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xED\xBF\xBF"));      // surrogate U+DFFF
  EXPECT_FALSE(IsValidUtf8("\xF0\x8F\xBF\xBF"));  // overlong 4-byte
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // U+110000
  EXPECT_FALSE(IsValidUtf8("\xF5\x80\x80\x80"));
  EXPECT_FALSE(IsValidUtf8("\xFF"));
  EXPECT_FALSE(IsValidUtf8("\xC2"));  // truncated at end
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));
  EXPECT_FALSE(IsValidUtf8("\xF0\x90\x80"));
  EXPECT_FALSE(IsValidUtf8("\xC2x"));  // bad continuation
  EXPECT_FALSE(IsValidUtf8("\xE2\x82x"));
}

TEST(ReportKeyTest, AllowedCharacters) {
  EXPECT_TRUE(IsValidReportKey("a"));
  EXPECT_TRUE(IsValidReportKey("ctx.switches_total-2"));
  EXPECT_TRUE(IsValidReportKey("AZaz09_.-"));
  EXPECT_FALSE(IsValidReportKey(""));
  EXPECT_FALSE(IsValidReportKey("a b"));
  EXPECT_FALSE(IsValidReportKey("a/b"));
  EXPECT_FALSE(IsValidReportKey("é"));
  EXPECT_FALSE(IsValidReportKey("a:b"));
}

TEST(ParseReportTest, SplitsLinesAtFirstEquals) {
  const ParsedReport parsed = ParseReport("backend=pv\npvops=tls:naive,batch=x\nempty=\n");
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_EQ(parsed.bad_line, 0u);
  const std::vector<ReportEntry>& entries = parsed.entries;
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].key, "backend");
  EXPECT_EQ(entries[0].value, "pv");
  EXPECT_EQ(entries[1].key, "pvops");
  EXPECT_EQ(entries[1].value, "tls:naive,batch=x");
  EXPECT_EQ(entries[2].key, "empty");
  EXPECT_EQ(entries[2].value, "");
}

TEST(ParseReportTest, LastLineMayOmitNewlineAndEmptyLinesAreSkipped) {
  const ParsedReport parsed = ParseReport("\n\na=1\n\nb=2");
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  ASSERT_EQ(parsed.entries.size(), 2u);
  EXPECT_EQ(parsed.entries[1].value, "2");
}

TEST(ParseReportTest, EmptyRecordHasNoEntries) {
  const ParsedReport parsed = ParseReport("");
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_TRUE(parsed.entries.empty());
}

TEST(ParseReportTest, ValueMayHoldTabsAndUtf8) {
  const ParsedReport parsed = ParseReport("note=a\tb µ");
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  ASSERT_EQ(parsed.entries.size(), 1u);
  EXPECT_EQ(parsed.entries[0].value, "a\tb µ");
}

TEST(ParseReportTest, RefusesBadRecords) {
  for (const std::string& bad :
       {"noequals\n"s, "=value\n"s, "bad key=1\n"s, "a=1\nb\n"s, "a=1\r\n"s, "a=\x01\n"s,
        "a=b\x7F"s, "a=\x00"s, "k=\xC0\x80"s, "a=1\n\xFF=2\n"s}) {
    const ParsedReport parsed = ParseReport(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.error, nullptr) << bad;
    EXPECT_TRUE(parsed.entries.empty()) << bad;
  }
}

TEST(ParseReportTest, RefusalNamesTheFirstBadLine) {
  const ParsedReport bad_key = ParseReport("a=1\n\nbad key=2\nc\n");
  EXPECT_STREQ(bad_key.error, "report line is not key=value");
  EXPECT_EQ(bad_key.bad_line, 3u);
  const ParsedReport control = ParseReport("a=1\r\n");
  EXPECT_STREQ(control.error, "report line has a control character");
  EXPECT_EQ(control.bad_line, 1u);
  const ParsedReport utf8 = ParseReport("a=1\nk=\xC0\x80");
  EXPECT_STREQ(utf8.error, "report is not valid UTF-8");
  EXPECT_EQ(utf8.bad_line, 0u);
}

}  // namespace
}  // namespace minivmm
