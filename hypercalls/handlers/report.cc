// report(gpa, len): hand the VMM `key=value` lines (report_parser.h rules).
// Order: a report store is wired (-ENOSYS), len <= MVMM_REPORT_MAX_BYTES
// (-E2BIG), [gpa, gpa + len) inside RAM (-EFAULT), the text parses (-EINVAL),
// the entries fit in what is left of GuestReports::kMaxBytes (-E2BIG).
// All-or-nothing: on any error nothing is appended. Returns the number of
// entries appended (0 for an empty record).
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"
#include "hypercalls/report_parser.h"
#include "vmm/internal/status_macros.h"

namespace minivmm::hc {

absl::StatusOr<uint64_t> report(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReportArgs::From(raw);
  if (env.reports == nullptr) return absl::UnimplementedError("report: no report store");
  if (args.len > MVMM_REPORT_MAX_BYTES) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("report: %d bytes is above %d", args.len, MVMM_REPORT_MAX_BYTES));
  }
  std::string text(args.len, '\0');
  RETURN_IF_ERROR(
      env.memory.Read(args.text, std::span(reinterpret_cast<uint8_t*>(text.data()), text.size())));
  ASSIGN_OR_RETURN(const std::vector<ReportEntry> entries, ParseReport(text));

  size_t bytes = 0;
  // Each entry is charged its host overhead too (two std::strings and a
  // vector slot), so that many tiny `a=` lines cannot store far more than
  // kMaxBytes of host memory.
  for (const ReportEntry& e : entries)
    bytes += e.key.size() + e.value.size() + GuestReports::kEntryOverheadBytes;
  GuestReports& store = *env.reports;
  if (bytes > GuestReports::kMaxBytes - store.bytes) {
    return absl::ResourceExhaustedError("report: the report store is full");
  }
  for (const ReportEntry& e : entries) store.entries.emplace_back(e.key, e.value);
  store.bytes += bytes;
  return entries.size();
}

}  // namespace minivmm::hc
