// The built-in guest's command-line check, on the host: `run` and `bench`
// refuse a workload name, workload parameter or pvops item the guest would
// refuse, with the guest's own one-line message and before any VM runs. The
// check is the guest's parser itself (guest/lib/cmdline.cc, freestanding
// C++ compiled for the host as minivmm_guest_cmdline), so its lists
// (workloads, parameters, pv ops and variants) are the guest's.
#ifndef MINIVMM_CLI_GUEST_CMDLINE_H_
#define MINIVMM_CLI_GUEST_CMDLINE_H_

#include <string>

#include "absl/status/status.h"

namespace minivmm::cli {

// OK when the built-in guest accepts `cmdline` ("backend=pv pvops=naive
// workload=ctx,rounds=5"); otherwise InvalidArgumentError with the line the
// guest prints before it shuts down with code 2.
absl::Status CheckGuestCommandLine(const std::string& cmdline);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_GUEST_CMDLINE_H_
