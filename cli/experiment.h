// What the CLI and the Python module (python/minivmm_py.cc) share: how
// backend/pvops/workload become the guest command line, the pvops
// configurations `bench` runs, and when a finished run counts as failed.
// Uses only the public API; linked by both as minivmm_cli_shared.
#ifndef MINIVMM_CLI_EXPERIMENT_H_
#define MINIVMM_CLI_EXPERIMENT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "minivmm/run_result.h"

namespace minivmm::cli {

// "backend=B pvops=P workload=W EXTRA", leaving out the empty parts, in that
// order (docs/design.md "Guest command line"). `minivmm run` builds its
// guest command line from its flags with this.
std::string ComposeGuestCommandLine(const std::string& backend, const std::string& pvops,
                                    const std::string& workload, const std::string& extra);

// The guest's backends (`--backend`).
const std::vector<std::string>& GuestBackends();

// One pvops setting that bench runs: all naive, one op changed on top of
// all naive (to its optimized variant; pte_flags also to patched; an op
// that all naive leaves optimized, pte_modify and switch_mm, to naive), or
// all optimized.
struct BenchConfiguration {
  std::string name;      // naive, an op's name alone (irq_restore, ...), optimized, xen, xen+<op>
  std::string pvops;     // the guest's pvops= value
  bool pv_only = false;  // meaningless under backend=native (the xen preset)
};
// naive, each op changed alone (its bench variants, GUEST_PVOP_LIST:
// irq_restore, ..., pte_flags_patched: the call sites patched at boot, ...,
// switch_mm: its naive variant), optimized; then,
// under pv, Xen's baseline (pvops=xen) and each seed optimized alone against
// it: the order of the tables and the plots.
const std::vector<BenchConfiguration>& BenchConfigurations();
// Their names, in that order, joined with ", " (the usage text, the error).
std::string BenchConfigurationNames();
// The configurations `names` selects (`bench --configurations`:
// "sp0,xen+tls"; empty for all of them), in BenchConfigurations()'s order,
// with the references their comparisons need: naive always, and xen for a
// xen+<op>. A name that is not a configuration is an InvalidArgument
// naming it and the known ones.
absl::StatusOr<std::vector<const BenchConfiguration*>> SelectBenchConfigurations(
    const std::string& names);

// The exit status `minivmm run` gives a finished run (README "Exit status");
// `stop_signal` is the signal that requested a stop (SIGINT or SIGTERM).
int ExitStatusFor(const RunResult& r, int stop_signal);

// Why a finished run does not count as a pass (not a guest shutdown, a
// non-zero code, failed guest self-checks), or "".
std::string RunFailure(const RunResult& r);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_EXPERIMENT_H_
