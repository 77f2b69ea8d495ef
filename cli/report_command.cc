// minivmm report RECORD.json -o report.html: a self-contained page (figures
// as embedded PNG, tables, provenance) drawn by bench/plot_report.py.
#include <fstream>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/plot_script.h"
#include "fmt/format.h"

namespace minivmm::cli {

void AddReportFlags(CLI::App& app, ReportOptions& o) {
  app.add_option("RECORD", o.input_path, "A run record (run --json) or bench record (bench --json)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("-o,--output", o.output_path,
                 "The page (.html), or one image of all figures (.png, .svg, .pdf)")
      ->required();
}

int ReportCommand(const ReportOptions& o) {
  int status = RunPlotScript(o.input_path, o.output_path);
  switch (status) {
    case kPlotOk:
      fmt::print(stderr, "minivmm report: wrote {}\n", o.output_path);
      return 0;
    case kPlotBadInput:
      return kExitUsage;
    case kPlotNoMatplotlib:
      return kPlotNoMatplotlib;
    default:
      return kPlotFailed;
  }
}

}  // namespace minivmm::cli
