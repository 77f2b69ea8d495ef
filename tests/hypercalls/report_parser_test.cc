#include "hypercalls/report_parser.h"

#include <gtest/gtest.h>

#include <string>

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
  auto entries = ParseReport("backend=pv\npvops=tls:naive,batch=x\nempty=\n");
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].key, "backend");
  EXPECT_EQ((*entries)[0].value, "pv");
  EXPECT_EQ((*entries)[1].key, "pvops");
  EXPECT_EQ((*entries)[1].value, "tls:naive,batch=x");
  EXPECT_EQ((*entries)[2].key, "empty");
  EXPECT_EQ((*entries)[2].value, "");
}

TEST(ParseReportTest, LastLineMayOmitNewlineAndEmptyLinesAreSkipped) {
  auto entries = ParseReport("\n\na=1\n\nb=2");
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[1].value, "2");
}

TEST(ParseReportTest, EmptyRecordHasNoEntries) {
  auto entries = ParseReport("");
  ASSERT_TRUE(entries.ok());
  EXPECT_TRUE(entries->empty());
}

TEST(ParseReportTest, ValueMayHoldTabsAndUtf8) {
  auto entries = ParseReport("note=a\tb µ");
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ((*entries)[0].value, "a\tb µ");
}

TEST(ParseReportTest, RefusesBadRecords) {
  for (const std::string& bad :
       {"noequals\n"s, "=value\n"s, "bad key=1\n"s, "a=1\nb\n"s, "a=1\r\n"s, "a=\x01\n"s,
        "a=b\x7F"s, "a=\x00"s, "k=\xC0\x80"s, "a=1\n\xFF=2\n"s}) {
    EXPECT_EQ(ParseReport(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace minivmm
