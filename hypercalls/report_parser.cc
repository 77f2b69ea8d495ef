#include "hypercalls/report_parser.h"

#include <cstdint>

namespace minivmm {
namespace {

bool IsContinuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

// The length of the UTF-8 sequence that starts at text[i], or 0 when it is
// malformed. Bounds for the second byte follow RFC 3629's table, which is what
// excludes overlongs, surrogates and code points above U+10FFFF.
size_t SequenceLength(std::string_view text, size_t i) {
  const auto at = [&](size_t k) { return static_cast<uint8_t>(text[i + k]); };
  const uint8_t lead = at(0);
  if (lead < 0x80) return 1;
  size_t len;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    len = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    len = 3;
    if (lead == 0xE0) lo = 0xA0;  // overlong
    if (lead == 0xED) hi = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    len = 4;
    if (lead == 0xF0) lo = 0x90;  // overlong
    if (lead == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // 0x80..0xC1 (continuation or overlong lead), 0xF5..0xFF
  }
  if (text.size() - i < len) return 0;
  if (at(1) < lo || at(1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (!IsContinuation(at(k))) return 0;
  }
  return len;
}

bool IsKeyChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

bool HasForbiddenControl(std::string_view line) {
  for (char c : line) {
    const auto byte = static_cast<uint8_t>(c);
    if ((byte < 0x20 && c != '\t') || byte == 0x7F) return true;
  }
  return false;
}

ParsedReport Refused(const char* error, size_t line) {
  ParsedReport refused;
  refused.error = error;
  refused.bad_line = line;
  return refused;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t len = SequenceLength(text, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

bool IsValidReportKey(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (!IsKeyChar(c)) return false;
  }
  return true;
}

ParsedReport ParseReport(std::string_view text) {
  if (!IsValidUtf8(text)) return Refused("report is not valid UTF-8", 0);
  ParsedReport parsed;
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (line.empty()) continue;
    if (HasForbiddenControl(line)) {
      return Refused("report line has a control character", line_number);
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos || !IsValidReportKey(line.substr(0, eq))) {
      return Refused("report line is not key=value", line_number);
    }
    parsed.entries.push_back({line.substr(0, eq), line.substr(eq + 1)});
  }
  return parsed;
}

}  // namespace minivmm
