// Running bench/plot_report.py, which draws the figures of `report` and
// `bench --plot` with matplotlib.
#ifndef MINIVMM_CLI_PLOT_SCRIPT_H_
#define MINIVMM_CLI_PLOT_SCRIPT_H_

#include <string>

namespace minivmm::cli {

// The script's exit statuses (bench/plot_report.py).
inline constexpr int kPlotOk = 0;
inline constexpr int kPlotFailed = 1;        // the script failed
inline constexpr int kPlotBadInput = 2;      // unreadable or unknown input record
inline constexpr int kPlotNoMatplotlib = 3;  // no Python with matplotlib found

// Where plot_report.py is, in this order: $MINIVMM_PLOT_SCRIPT; the
// installed copy <prefix>/share/minivmm/plot_report.py next to
// <prefix>/bin/minivmm; a copy beside the binary (build trees); the source
// tree this binary was built from (MINIVMM_SOURCE_DIR/bench). "" if none.
std::string FindPlotScript();

// Runs `python plot_report.py input -o output` and returns one of the
// statuses above. Tries $MINIVMM_PYTHON if set, else `python3` from PATH
// and then /usr/bin/python3 (where Debian's python3-matplotlib lives),
// moving on when one lacks matplotlib (the script itself answers
// kPlotNoMatplotlib: one Python start per try). Messages go to stderr.
int RunPlotScript(const std::string& input, const std::string& output);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_PLOT_SCRIPT_H_
