// minivmm: run a guest and count its exits by cause (README.md).
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "vmm/cli/commands.h"
#include "vmm/cli/exit_codes.h"

int main(int argc, char** argv) {
  CLI::App app{"minivmm: a KVM mini hypervisor that counts what paravirt ops cost in VM exits"};
  app.set_version_flag("--version", MINIVMM_VERSION);
  app.require_subcommand(1);

  minivmm::cli::RunOptions run;
  CLI::App* run_cmd = app.add_subcommand("run", "Boot a guest, stream its console, print its exits");
  minivmm::cli::AddRunFlags(*run_cmd, run);

  CLI::App* info_cmd = app.add_subcommand("info", "Show this host's KVM and what minivmm needs of it");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : minivmm::cli::kExitUsage;
  }
  if (*run_cmd) return minivmm::cli::RunCommand(run);
  if (*info_cmd) return minivmm::cli::InfoCommand();
  return minivmm::cli::kExitUsage;
}
