// RunResult's recent exits and registers as lines (minivmm/run_result.h).
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "minivmm/run_result.h"
#include "minivmm_abi/boot.h"

namespace minivmm {

std::string DescribeRecentExit(const RecentExit& e,
                               const std::vector<std::string>& hypercall_names) {
  std::string what;
  if (e.hypercall) {
    const bool named = e.rax < hypercall_names.size() && !hypercall_names[e.rax].empty();
    what = named ? absl::StrFormat("hypercall %s", hypercall_names[e.rax])
                 : absl::StrFormat("hypercall %u", e.rax);
    absl::StrAppendFormat(&what, " rdi=0x%x rsi=0x%x", e.rdi, e.rsi);
  } else if (e.reason == ExitReason::kCount) {
    what = absl::StrFormat("KVM_RUN failed errno=%u", e.detail);
  } else {
    what = std::string(ExitReasonName(e.reason));
    if (e.reason == ExitReason::kIo) {
      absl::StrAppendFormat(&what, " %s port 0x%x size %u", e.write ? "out" : "in", e.address,
                            e.size);
    } else if (e.reason == ExitReason::kMmio) {
      absl::StrAppendFormat(&what, " %s 0x%x size %u", e.write ? "write" : "read", e.address,
                            e.size);
    }
    if ((e.reason == ExitReason::kIo || e.reason == ExitReason::kMmio) && e.write) {
      absl::StrAppendFormat(&what, " data=0x%x", e.detail);
    } else if (e.reason == ExitReason::kFailEntry || e.reason == ExitReason::kInternalError ||
               e.reason == ExitReason::kSystemEvent || e.reason == ExitReason::kHyperv ||
               e.reason == ExitReason::kIoapicEoi || e.reason == ExitReason::kUnknown) {
      absl::StrAppendFormat(&what, " detail=0x%x", e.detail);
    }
  }
  std::string line = absl::StrFormat("#%u %s rip=0x%x rflags=0x%x cpl=%u", e.sequence, what,
                                     e.rip, e.rflags, e.cpl);
  if (e.injected_vector != 0)
    absl::StrAppendFormat(&line, " (entered with vector 0x%x injected)", e.injected_vector);
  return line;
}

bool StoppedOnAFailure(const RunResult& r, bool builtin_guest) {
  if (r.reason != StopReason::kGuestShutdown) return true;
  return builtin_guest &&
         (r.exit_code == MVMM_SHUTDOWN_CHECK_FAILED || r.exit_code == MVMM_SHUTDOWN_EXCEPTION ||
          r.exit_code == MVMM_SHUTDOWN_ASSERT);
}

std::vector<std::string> StopDiagnosis(const RunResult& r) {
  std::vector<std::string> lines;
  lines.push_back(absl::StrFormat("vCPU %d registers:", r.stopped_by_vcpu < 0 ? 0 : r.stopped_by_vcpu));
  std::string row;
  int column = 0;
  for (const auto& [name, value] : r.registers) {
    absl::StrAppendFormat(&row, "  %6s=%016x", name, value);
    if (++column % 4 == 0) {
      lines.push_back(row);
      row.clear();
    }
  }
  if (!row.empty()) lines.push_back(row);
  for (size_t v = 0; v < r.recent_exits.size(); ++v) {
    const std::vector<RecentExit>& exits = r.recent_exits[v];
    const uint64_t total = exits.empty() ? 0 : exits.back().sequence + 1;
    lines.push_back(absl::StrFormat("vCPU %u: its last %u of %u exits, oldest first:", v,
                                    exits.size(), total));
    for (const RecentExit& e : exits)
      lines.push_back("  " + DescribeRecentExit(e, r.hypercall_names));
  }
  return lines;
}

}  // namespace minivmm
