// Guest report values in JSON records (docs/run-record.md). The guest sends
// every value as text; records since run schema version 2 store a value that
// is exactly the decimal form of an integer as a JSON number, anything else
// as a string. Readers accept both forms, so records of version 1 (all
// strings) still read.
#ifndef MINIVMM_CLI_REPORT_VALUE_H_
#define MINIVMM_CLI_REPORT_VALUE_H_

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace minivmm::cli {

// "64" -> 64, "-3" -> -3; "007", "-0", "+1", "1.5", "on", "" and integers
// beyond 64 bits stay strings, so that the text is always recoverable.
inline nlohmann::json ReportValueJson(std::string_view text) {
  std::string_view digits = text;
  const bool negative = !digits.empty() && digits.front() == '-';
  if (negative) digits.remove_prefix(1);
  const bool canonical =
      !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos &&
      (digits.size() == 1 || digits.front() != '0') && !(negative && digits == "0");
  if (canonical) {
    if (negative) {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec == std::errc() && end == text.data() + text.size()) return v;
    } else {
      uint64_t v = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec == std::errc() && end == text.data() + text.size()) return v;
    }
  }
  return std::string(text);
}

// A report value as a number: a JSON number, or a string that parses
// completely as one (records of version 1).
inline std::optional<double> ReportNumber(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return std::nullopt;
  const std::string& s = v.get_ref<const std::string&>();
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) return std::nullopt;
  return d;
}

// A report value as the text the guest sent: strings as they are, integers
// in decimal.
inline std::string ReportText(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_REPORT_VALUE_H_
