// The JSON run record: the source of truth of a run. The exit table, bench
// tables and plots are renderings of it. Schema: docs/run-record.md.
#ifndef MINIVMM_VMM_CLI_RUN_RECORD_H_
#define MINIVMM_VMM_CLI_RUN_RECORD_H_

#include <string>

#include "nlohmann/json.hpp"
#include "vmm/host_info.h"
#include "vmm/run_result.h"
#include "vmm/vm_config.h"

namespace minivmm::cli {

inline constexpr int kRunRecordSchemaVersion = 1;

nlohmann::json MakeRunRecord(const VmConfig& config, const RunResult& result, const HostInfo* host,
                             const std::string& kernel_digest);

}  // namespace minivmm::cli

#endif  // MINIVMM_VMM_CLI_RUN_RECORD_H_
