// The CLI's subcommands. Each returns the process exit status.
#ifndef MINIVMM_VMM_CLI_COMMANDS_H_
#define MINIVMM_VMM_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace minivmm::cli {

struct RunOptions {
  std::string kernel;
  uint64_t memory = 64ull << 20;
  std::string backend;
  std::string pvops;
  std::string workload;
  std::string cmdline;
  uint32_t timer_hz = 0;
  double timeout_seconds = 0;
  std::string json_path;
  std::string trace_path;
  bool quiet = false;
};

void AddRunFlags(CLI::App& app, RunOptions& options);
// The guest command line that the flags add up to (DESIGN.md).
std::string GuestCommandLine(const RunOptions& options);
int RunCommand(const RunOptions& options);
int InfoCommand();

}  // namespace minivmm::cli

#endif  // MINIVMM_VMM_CLI_COMMANDS_H_
