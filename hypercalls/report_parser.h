// Parsing of the `report` hypercall's record: pure, so every rule is tested
// without guest memory.
#ifndef MINIVMM_HYPERCALLS_REPORT_PARSER_H_
#define MINIVMM_HYPERCALLS_REPORT_PARSER_H_

#include <cstddef>
#include <string_view>
#include <vector>

namespace minivmm {

// True when `text` is well-formed UTF-8 (RFC 3629): no overlong encodings,
// no surrogates (U+D800..U+DFFF), nothing above U+10FFFF, no truncated
// sequence at the end.
bool IsValidUtf8(std::string_view text);

// True when `key` is non-empty and made only of [A-Za-z0-9_.-].
bool IsValidReportKey(std::string_view key);

struct ReportEntry {
  std::string_view key;  // views into the parsed text
  std::string_view value;
};

// Splits a record into `key=value` lines. Rules:
// - the whole text must be valid UTF-8;
// - lines end with '\n'; the last line may omit it; empty lines are skipped;
// - each other line has a key (IsValidReportKey) before its first '=', and a
//   value (possibly empty) after it;
// - no control character other than TAB anywhere outside line ends (that
//   includes '\r' and NUL): records end up in logs and JSON.
// All-or-nothing: a bad line refuses the whole record. No absl::Status and
// no formatting: the report hypercall maps a refusal to -EINVAL with `error`
// as its reason.
struct ParsedReport {
  std::vector<ReportEntry> entries;  // in order; empty when refused
  const char* error = nullptr;       // static text when refused, else null
  size_t bad_line = 0;               // 1-based line of the error; 0 for bad UTF-8

  bool ok() const { return error == nullptr; }
};
ParsedReport ParseReport(std::string_view text);

}  // namespace minivmm

#endif  // MINIVMM_HYPERCALLS_REPORT_PARSER_H_
