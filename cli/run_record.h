// The JSON run record: the source of truth of a run. The exit table, bench
// tables and plots are renderings of it, and the Python module returns it
// (minivmm.run). Schema: docs/run-record.md.
#ifndef MINIVMM_CLI_RUN_RECORD_H_
#define MINIVMM_CLI_RUN_RECORD_H_

#include <string>

#include "minivmm/host_info.h"
#include "minivmm/run_result.h"
#include "minivmm/vm_config.h"
#include "nlohmann/json.hpp"

namespace minivmm::cli {

// 2: guest report values that are decimal integers are JSON numbers (1: all strings).
inline constexpr int kRunRecordSchemaVersion = 2;

// Runs the host probe (ProbeHostBehaviour with the built-in guest, or the
// guest image `kernel` names) and stores its answers in host.behaviour; when
// the probe cannot run at all, every answer is left unmeasured with the
// reason as its evidence. Without a probe (host.behaviour empty) the record
// says every answer is unmeasured (null) and has no "probe" object.
void ProbeBehaviourInto(HostInfo& host, const std::string& kvm_device = "/dev/kvm",
                        const std::string& kernel = "");

// provenance.host without guest_detected: the host, its KVM and the probe's answers.
nlohmann::json HostRecord(const HostInfo& host);

// provenance.host holds `host` (when not null) with its probed behaviours,
// and always guest_detected: what this run's guest itself reported.
nlohmann::json MakeRunRecord(const VmConfig& config, const RunResult& result, const HostInfo* host,
                             const std::string& kernel_digest);

// A run or bench record read back from `path` (what compare and report
// take). The record and its schema ("minivmm.run" or "minivmm.bench"), or
// false with `*error` set: the file cannot be read, is not a JSON object,
// or is neither record.
bool ReadRecord(const std::string& path, nlohmann::json* record, std::string* schema,
                std::string* error);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_RUN_RECORD_H_
