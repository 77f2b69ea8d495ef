// minivmm report RECORD.json -o report.html: a self-contained page (figures
// as embedded PNG, tables, provenance) drawn by bench/plot_report.py.
#include <memory>

#include "cli/bench_record.h"
#include "CLI/CLI.hpp"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output_file.h"
#include "cli/plot_script.h"
#include "cli/run_record.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

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
  // What is not a record is refused here, before any Python starts (the
  // script checks the same, bench/plot_report.py's load()).
  nlohmann::json record;
  std::string schema, error;
  if (!ReadRecord(o.input_path, &record, &schema, &error)) {
    fmt::print(stderr, "minivmm report: {}\n", error);
    return kExitUsage;
  }
  absl::StatusOr<std::unique_ptr<OutputFile>> out = OutputFile::Create(o.output_path, "report");
  if (!out.ok()) {
    fmt::print(stderr, "minivmm report: {}\n", std::string(out.status().message()));
    return kExitUsage;
  }
  // The page says so too (bench/plot_report.py).
  if (std::string note = IncompleteSummary(record); !note.empty())
    fmt::print(stderr, "minivmm report: {} is incomplete: {}\n", o.input_path, note);
  int status = RunPlotScript(o.input_path, (*out)->temp_path());
  switch (status) {
    case kPlotOk:
      if (absl::Status s = (*out)->Commit(); !s.ok()) {
        fmt::print(stderr, "minivmm report: {}\n", std::string(s.message()));
        return kExitVmmError;
      }
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
