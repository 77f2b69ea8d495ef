#include "lib/format.h"

#include <gtest/gtest.h>

#include <string>

namespace guest {
namespace {

std::string S(StrView v) { return std::string(v.data(), v.size()); }

TEST(TextBufTest, FormatsDecimalHexAndSigned) {
  char storage[64];
  TextBuf b(storage, sizeof(storage));
  b.Dec(0)
      .Char(' ')
      .Dec(18446744073709551615ull)
      .Char(' ')
      .Hex(0xabc)
      .Char(' ')
      .Hex(5, 4)
      .Char(' ')
      .SDec(-42);
  EXPECT_EQ(S(b.View()), "0 18446744073709551615 abc 0005 -42");
}

TEST(TextBufTest, SDecHandlesInt64Min) {
  char storage[32];
  TextBuf b(storage, sizeof(storage));
  b.SDec(INT64_MIN);
  EXPECT_EQ(S(b.View()), "-9223372036854775808");
}

TEST(TextBufTest, KvWritesOneReportLine) {
  char storage[64];
  TextBuf b(storage, sizeof(storage));
  b.Kv("a.b", 3).Kv("ctx", "switches", 7).Kv("k", "v");
  EXPECT_EQ(S(b.View()), "a.b=3\nctx.switches=7\nk=v\n");
}

TEST(TextBufTest, OverflowIsRememberedAndNothingWrittenPastCapacity) {
  char storage[8] = {};
  TextBuf b(storage, 4);
  b.Str("abcdef");
  EXPECT_TRUE(b.overflowed());
  EXPECT_EQ(S(b.View()), "abcd");
  EXPECT_EQ(storage[4], '\0');
  b.Clear();
  EXPECT_FALSE(b.overflowed());
  EXPECT_EQ(b.size(), 0u);
}

TEST(StrViewTest, ToU64AcceptsDigitsOnlyAndRejectsOverflow) {
  uint64_t v = 0;
  EXPECT_TRUE(StrView("18446744073709551615").ToU64(&v));
  EXPECT_EQ(v, 18446744073709551615ull);
  EXPECT_FALSE(StrView("18446744073709551616").ToU64(&v));
  EXPECT_FALSE(StrView("").ToU64(&v));
  EXPECT_FALSE(StrView("-1").ToU64(&v));
  EXPECT_FALSE(StrView("1x").ToU64(&v));
}

TEST(StrViewTest, FindAndSubClampToSize) {
  StrView s("key=value");
  EXPECT_EQ(s.Find('='), 3u);
  EXPECT_EQ(s.Find('#'), s.size());
  EXPECT_EQ(S(s.Sub(4)), "value");
  EXPECT_EQ(S(s.Sub(100)), "");
  EXPECT_EQ(S(s.Sub(0, 100)), "key=value");
}

}  // namespace
}  // namespace guest
