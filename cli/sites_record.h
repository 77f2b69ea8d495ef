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

// Folded stacks of a `sites` section: one "cause;root;...;leaf count" line
// per distinct stack and cause, root first.
std::string FoldedStacks(const nlohmann::json& sites);

// Adds record["sites"] when the run recorded sites (`minivmm run --sites`,
// Python's run(sites=True)).
void AddSites(nlohmann::json& record, const RunResult& result, const std::string& kernel_path);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_SITES_RECORD_H_
