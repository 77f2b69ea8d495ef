// report(gpa, len): hand the VMM `key=value` lines (report_parser.h rules).
// Order: a report store is wired (-ENOSYS), len <= MVMM_REPORT_MAX_BYTES
// (-E2BIG), [gpa, gpa + len) inside RAM (-EFAULT), the text parses (-EINVAL),
// the entries fit in what is left of GuestReports::kMaxBytes (-E2BIG).
// All-or-nothing: on any error nothing is appended. Returns the number of
// entries appended (0 for an empty record).
#include <array>
#include <span>
#include <string_view>

#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"
#include "hypercalls/report_parser.h"

namespace minivmm::hc {

HypercallResult report(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_report>(raw);
  if (env.reports == nullptr) return Refuse(MVMM_ENOSYS, "no report store wired");
  if (args.len > MVMM_REPORT_MAX_BYTES) {
    return Refuse(MVMM_E2BIG, "len above MVMM_REPORT_MAX_BYTES");
  }
  // 16 KiB on the vCPU thread's stack, like multicall's list: copying the
  // text costs no allocation.
  std::array<char, MVMM_REPORT_MAX_BYTES> buffer;
  const std::span<char> text(buffer.data(), args.len);
  if (!env.memory.Read(args.text, text)) return Refuse(MVMM_EFAULT, "text outside RAM");
  const ParsedReport parsed = ParseReport(std::string_view(text.data(), text.size()));
  if (!parsed.ok()) return Refuse(MVMM_EINVAL, parsed.error);

  size_t bytes = 0;
  // Each entry is charged its host overhead too (two std::strings and a
  // vector slot), so that many tiny `a=` lines cannot store far more than
  // kMaxBytes of host memory.
  for (const ReportEntry& e : parsed.entries)
    bytes += e.key.size() + e.value.size() + GuestReports::kEntryOverheadBytes;
  GuestReports& store = *env.reports;
  if (bytes > GuestReports::kMaxBytes - store.bytes) {
    return Refuse(MVMM_E2BIG, "report store full");
  }
  for (const ReportEntry& e : parsed.entries) store.entries.emplace_back(e.key, e.value);
  store.bytes += bytes;
  if (store.on_record && !parsed.entries.empty()) store.on_record(parsed.entries.front().key);
  return Done(parsed.entries.size());
}

}  // namespace minivmm::hc
