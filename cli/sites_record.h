// The run record's `sites` section (docs/run-record.md, docs/sites.md): each
// distinct (cause, stack) of RunResult::sites_per_vcpu with its frames named
// from the guest ELF, and the folded stacks of --stacks.
#ifndef MINIVMM_CLI_SITES_RECORD_H_
#define MINIVMM_CLI_SITES_RECORD_H_

#include <string>

#include "absl/status/status.h"
#include "minivmm/run_result.h"
#include "nlohmann/json.hpp"

namespace minivmm::cli {

// The `sites` section, symbolized from the ELF at `kernel_path` (an ELF
// that cannot be read names no frame: addresses stay raw, and `symbols`
// says why). Stacks are sorted by exits, most first.
nlohmann::json SitesRecord(const RunResult& result, const std::string& kernel_path);

// Folded stacks of a record's `sites` section: one "cause;root;...;leaf
// count" line per distinct stack and cause, root first; with --kernel-exits
// also one "kvm:reason;function count" line per in-kernel site, for the
// exits KVM handled in the kernel (docs/sites.md).
std::string FoldedStacks(const nlohmann::json& record);

// Adds record["sites"] when the run recorded sites (`minivmm run --sites`,
// Python's run(sites=True)).
void AddSites(nlohmann::json& record, const RunResult& result, const std::string& kernel_path);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_SITES_RECORD_H_
