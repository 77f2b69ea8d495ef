// The human rendering of a run record: exits by cause, reason, device and
// hypercall, each row naming where its number comes from (vmm, kvm-stats,
// guest), in the manner of kvm_stat and perf kvm stat.
#ifndef MINIVMM_CLI_EXIT_TABLE_H_
#define MINIVMM_CLI_EXIT_TABLE_H_

#include <string>

#include "nlohmann/json.hpp"

namespace minivmm::cli {

std::string RenderExitTable(const nlohmann::json& record);

// One line on how the vCPUs stopped, from the record's result.vcpus: which
// vCPU stopped the run (or that the host did) and which were idle, e.g.
// "4 vCPUs: vCPU 3 stopped the run (triple fault); idle: vCPU 1, 2".
std::string VcpuStopLine(const nlohmann::json& record);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_EXIT_TABLE_H_
