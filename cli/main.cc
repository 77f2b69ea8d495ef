// minivmm: run a guest and count its exits by cause (README.md).
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/exit_codes.h"

int main(int argc, char** argv) {
  CLI::App app{"minivmm: a KVM mini hypervisor that counts what paravirt ops cost in VM exits"};
  app.set_version_flag("--version", MINIVMM_VERSION);
  app.require_subcommand(1);

  minivmm::cli::RunOptions run;
  CLI::App* run_cmd =
      app.add_subcommand("run", "Boot a guest, stream its console, print its exits");
  minivmm::cli::AddRunFlags(*run_cmd, run);

  minivmm::cli::InfoOptions info;
  CLI::App* info_cmd = app.add_subcommand(
      "info", "Show this host's KVM, what minivmm needs of it, and how it behaves (a probe run)");
  minivmm::cli::AddInfoFlags(*info_cmd, info);

  minivmm::cli::BenchOptions bench;
  CLI::App* bench_cmd = app.add_subcommand(
      "bench", "Run workloads naive, one op changed at a time, and optimized; tabulate exits");
  minivmm::cli::AddBenchFlags(*bench_cmd, bench);
  for (int i = 0; i < argc; ++i) bench.command_line += (i ? " " : "") + std::string(argv[i]);

  minivmm::cli::CompareOptions compare;
  CLI::App* compare_cmd =
      app.add_subcommand("compare", "Compare two run or bench records (JSON), metric by metric");
  minivmm::cli::AddCompareFlags(*compare_cmd, compare);

  minivmm::cli::ReportOptions report;
  CLI::App* report_cmd =
      app.add_subcommand("report", "Draw a run or bench record as a self-contained HTML page");
  minivmm::cli::AddReportFlags(*report_cmd, report);

  minivmm::cli::TraceOptions trace;
  CLI::App* trace_cmd = app.add_subcommand(
      "trace", "Convert a saved --trace jsonl file to a timeline for ui.perfetto.dev");
  minivmm::cli::AddTraceFlags(*trace_cmd, trace);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : minivmm::cli::kExitUsage;
  }
  if (*run_cmd) return minivmm::cli::RunCommand(run);
  if (*info_cmd) return minivmm::cli::InfoCommand(info);
  if (*bench_cmd) return minivmm::cli::BenchCommand(bench);
  if (*compare_cmd) return minivmm::cli::CompareCommand(compare);
  if (*report_cmd) return minivmm::cli::ReportCommand(report);
  if (*trace_cmd) return minivmm::cli::TraceCommand(trace);
  return minivmm::cli::kExitUsage;
}
