// Nothing the host side writes is lost or silently dropped, and typos fail
// before anything runs (README.md "Exit status", docs/run-record.md "What a
// failure leaves"): OutputFile itself, every command's output files, the
// host-side check of the guest command line, and a bench stopped early.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/experiment.h"
#include "cli/output_file.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/command.h"

// A namespace of the file's own: the test binaries are unity builds.
namespace output_test {
namespace {

using ::minivmm::cli::OutputFile;
using ::minivmm::testing::Minivmm;
using ::minivmm::testing::Outcome;
using nlohmann::json;
namespace fs = std::filesystem;

// A fresh directory per test and process (ctest runs tests in parallel).
std::string Dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "/output_" + std::to_string(getpid()) + "_" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

size_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

TEST(OutputFileTest, NothingUnderTheNameUntilCommitThenTheWholeFile) {
  const std::string dir = Dir("commit");
  absl::StatusOr<std::unique_ptr<OutputFile>> f = OutputFile::Create(dir + "/fig.png", "plot");
  ASSERT_TRUE(f.ok()) << f.status();
  // The temporary file is beside the target and keeps its extension.
  const std::string temp = (*f)->temp_path();
  EXPECT_EQ(temp.rfind(dir + "/.fig.", 0), 0u) << temp;
  EXPECT_EQ(temp.substr(temp.size() - 4), ".png") << temp;
  (*f)->Write("one ");
  (*f)->Write("two\n");
  EXPECT_EQ(Entries(dir), std::vector<std::string>{temp.substr(dir.size() + 1)});
  ASSERT_TRUE((*f)->Commit().ok());
  EXPECT_EQ(Entries(dir), std::vector<std::string>{"fig.png"});
  EXPECT_EQ(Slurp(dir + "/fig.png"), "one two\n");
  struct stat st {};
  ASSERT_EQ(stat((dir + "/fig.png").c_str(), &st), 0);
  const mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
}

TEST(OutputFileTest, AbandonLeavesTheOldFileAndNoTemporaryFile) {
  const std::string dir = Dir("abandon");
  std::ofstream(dir + "/run.json") << "old\n";
  {
    absl::StatusOr<std::unique_ptr<OutputFile>> f = OutputFile::Create(dir + "/run.json", "x");
    ASSERT_TRUE(f.ok()) << f.status();
    (*f)->Write("half");
  }  // destroyed without Commit
  EXPECT_EQ(Entries(dir), std::vector<std::string>{"run.json"});
  EXPECT_EQ(Slurp(dir + "/run.json"), "old\n");
}

TEST(OutputFileTest, MissingDirectoryIsInvalidArgumentNamingThePath) {
  absl::StatusOr<std::unique_ptr<OutputFile>> f =
      OutputFile::Create("/nonexistent/dir/x.json", "run record");
  ASSERT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.status().message(),
            "cannot create run record /nonexistent/dir/x.json: No such file or directory");
  EXPECT_EQ(OutputFile::Create(Dir("isdir"), "x").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OutputFileTest, FullDeviceFailsCommitWithItsErrno) {
  absl::StatusOr<std::unique_ptr<OutputFile>> f = OutputFile::Create("/dev/full", "trace");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->temp_path(), "/dev/full");  // not a regular file: written in place
  (*f)->Write(std::string(100000, 'x'));
  absl::Status s = (*f)->Commit();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "cannot write trace /dev/full: No space left on device");
}

// --- every command's files ---

TEST(CliOutputTest, TraceToAFullDiskFailsWith125InBothFormats) {
  REQUIRE_KVM();
  for (const char* format : {"jsonl", "perfetto"}) {
    Outcome o =
        Minivmm(std::string("run -q --workload hello --trace /dev/full --trace-format ") + format);
    EXPECT_EQ(o.status, 125) << format << "\n" << o.out;
    EXPECT_NE(o.out.find("minivmm: cannot write trace /dev/full: No space left on device\n"),
              std::string::npos)
        << o.out;
  }
}

TEST(CliOutputTest, RecordToAFullDiskFailsWith125) {
  REQUIRE_KVM();
  Outcome o = Minivmm("run -q --workload hello --json /dev/full");
  EXPECT_EQ(o.status, 125) << o.out;
  EXPECT_NE(o.out.find("minivmm: cannot write run record /dev/full: No space left on device\n"),
            std::string::npos)
      << o.out;
}

// The guest console is output the user asked for too: on a full disk the
// command fails with 125 and says so, after reporting the run.
TEST(CliOutputTest, ConsoleToAFullDiskFailsWith125) {
  REQUIRE_KVM();
  // stdout to /dev/full inside the group; the group's stderr is captured.
  Outcome o = ::minivmm::testing::Shell(std::string("{ ") + MINIVMM_BIN +
                                        " run -q --workload hello >/dev/full; }");
  EXPECT_EQ(o.status, 125) << o.out;
  EXPECT_EQ(o.out,
            "minivmm: cannot write the guest console to standard output: No space left on "
            "device\n");
}

// A bad path: status 2, one line, and no guest ran (the built-in guest
// prints "hello" lines and the exit table would follow).
TEST(CliOutputTest, UncreatableOutputIsUsageErrorBeforeAnythingRuns) {
  const std::string bad = "/nonexistent/dir/x.json";
  for (const std::string& args :
       {"run --workload hello --json " + bad, "run --workload hello --trace " + bad,
        "run --workload hello --trace-format perfetto --trace " + bad,
        "run --workload hello --stacks " + bad, "bench --workloads irq --repeat 1 --json " + bad,
        "bench --workloads irq --repeat 1 --csv " + bad,
        std::string("bench --workloads irq --repeat 1 --plot /nonexistent/dir/x.png")}) {
    Outcome o = Minivmm(args);
    EXPECT_EQ(o.status, 2) << args << "\n" << o.out;
    EXPECT_EQ(Lines(o.out), 1u) << args << "\n" << o.out;
    EXPECT_NE(o.out.find("cannot create"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("/nonexistent/dir/x."), std::string::npos) << o.out;
  }
}

// Makes `dir` read-only for this process and the commands it starts: as
// root (CI), where permission bits do not stop writes, a read-only bind
// mount of it in a private mount namespace of this test process (the host's
// mounts are untouched); otherwise mode 0555. "" on success, else why not.
std::string MakeReadOnly(const std::string& dir) {
  if (geteuid() != 0) {
    return chmod(dir.c_str(), 0555) == 0 ? "" : std::string("chmod: ") + strerror(errno);
  }
  if (unshare(CLONE_NEWNS) != 0) return std::string("unshare(CLONE_NEWNS): ") + strerror(errno);
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      mount(dir.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
      mount(nullptr, dir.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0) {
    return std::string("read-only bind mount: ") + strerror(errno);
  }
  return "";
}

// The premise is checked, not assumed: a file cannot be created in the
// directory; a host where that cannot be arranged fails the test.
TEST(CliOutputTest, AReadOnlyDirectoryIsAUsageErrorBeforeAnythingRuns) {
  const std::string dir = Dir("readonly");
  ASSERT_EQ(MakeReadOnly(dir), "");
  const std::string probe = dir + "/probe";
  const int fd = open(probe.c_str(), O_CREAT | O_WRONLY, 0644);
  if (fd >= 0) close(fd);
  ASSERT_LT(fd, 0) << "could create " << probe << ": the directory is not read-only";
  // Inputs for trace and report, outside the read-only directory.
  const std::string inputs = Dir("readonly_inputs");
  std::ofstream(inputs + "/t.jsonl") << "{\"reason\":\"hlt\",\"seq\":0}\n";
  std::ofstream(inputs + "/r.json") << "{\"schema\":\"minivmm.run\"}\n";
  for (const std::string& args :
       {"run --workload hello --json " + dir + "/x.json",
        "run --workload hello --trace " + dir + "/x.txt",
        "run --workload hello --trace-format perfetto --trace " + dir + "/x.pftrace",
        "run --workload hello --stacks " + dir + "/x.folded",
        "bench --workloads irq --repeat 1 --json " + dir + "/x.json",
        "bench --workloads irq --repeat 1 --csv " + dir + "/x.csv",
        "bench --workloads irq --repeat 1 --plot " + dir + "/x.png",
        "trace " + inputs + "/t.jsonl -o " + dir + "/x.json",
        "report " + inputs + "/r.json -o " + dir + "/x.html"}) {
    Outcome o = Minivmm(args);
    EXPECT_EQ(o.status, 2) << args << "\n" << o.out;
    EXPECT_EQ(Lines(o.out), 1u) << args << "\n" << o.out;
    EXPECT_NE(o.out.find("cannot create"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find(dir + "/x."), std::string::npos) << o.out;
  }
  EXPECT_TRUE(Entries(dir).empty());
}

TEST(CliOutputTest, ReportAndTraceOutputsThatCannotBeCreatedAreUsageErrors) {
  const std::string dir = Dir("readers");
  std::ofstream(dir + "/t.jsonl") << "{\"reason\":\"hlt\",\"seq\":0}\n";
  std::ofstream(dir + "/r.json") << "{\"schema\":\"minivmm.run\"}\n";
  Outcome t = Minivmm("trace " + dir + "/t.jsonl -o /nonexistent/dir/t.json");
  EXPECT_EQ(t.status, 2) << t.out;
  EXPECT_EQ(t.out,
            "minivmm trace: cannot create timeline /nonexistent/dir/t.json: No such file "
            "or directory\n");
  Outcome r = Minivmm("report " + dir + "/r.json -o /nonexistent/dir/r.html");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(r.out,
            "minivmm report: cannot create report /nonexistent/dir/r.html: No such file "
            "or directory\n");
}

TEST(CliOutputTest, RecordAndTraceAreWholeAndAloneInTheirDirectory) {
  REQUIRE_KVM();
  const std::string dir = Dir("whole");
  Outcome o =
      Minivmm("run -q --workload hello --json " + dir + "/r.json --trace " + dir + "/t.jsonl");
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_EQ(Entries(dir), (std::vector<std::string>{"r.json", "t.jsonl"}));
  EXPECT_FALSE(json::parse(Slurp(dir + "/r.json"), nullptr, false).is_discarded());
}

// SIGKILL mid-run: the record and the trace exist only as their temporary
// files (partial), never under their names.
TEST(CliOutputTest, KillNineLeavesNothingUnderTheFinalNames) {
  REQUIRE_KVM();
  const std::string dir = Dir("kill9");
  const std::string json_path = dir + "/r.json", trace_path = dir + "/t.jsonl";
  const std::string kernel = std::string(MINIVMM_TINY_GUEST_DIR) + "/spin.elf";
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = freopen("/dev/null", "w", stderr);
    (void)f;
    execl(MINIVMM_BIN, MINIVMM_BIN, "run", "--timeout", "60", "--kernel", kernel.c_str(), "--json",
          json_path.c_str(), "--trace", trace_path.c_str(), nullptr);
    _exit(127);
  }
  // Both temporary files are created before the VM; kill once they exist.
  for (int i = 0; i < 3000 && Entries(dir).size() < 2; ++i) usleep(10 * 1000);
  usleep(200 * 1000);
  kill(pid, SIGKILL);
  int raw = 0;
  waitpid(pid, &raw, 0);
  EXPECT_TRUE(WIFSIGNALED(raw) && WTERMSIG(raw) == SIGKILL);
  const std::vector<std::string> left = Entries(dir);
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].rfind(".r.", 0), 0u) << left[0];
  EXPECT_EQ(left[1].rfind(".t.", 0), 0u) << left[1];
  EXPECT_FALSE(fs::exists(json_path));
  EXPECT_FALSE(fs::exists(trace_path));
}

// The jsonl trace's last line says it is whole; `trace` turns it into the
// stop marker, and says when a trace has none (cut short).
TEST(CliOutputTest, JsonlTraceEndsWithItsEndLineAndTraceSaysWhenItIsMissing) {
  REQUIRE_KVM();
  const std::string dir = Dir("end");
  ASSERT_EQ(Minivmm("run -q --workload hello --trace " + dir + "/t.jsonl").status, 0);
  std::vector<std::string> lines;
  std::istringstream in(Slurp(dir + "/t.jsonl"));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_GE(lines.size(), 2u);
  const json end = json::parse(lines.back(), nullptr, false);
  EXPECT_EQ(end["trace_end"], true);
  EXPECT_EQ(end["exits"], lines.size() - 1);
  EXPECT_EQ(end["stop_reason"], "guest shutdown");

  Outcome whole = Minivmm("trace " + dir + "/t.jsonl -o " + dir + "/whole.json");
  ASSERT_EQ(whole.status, 0) << whole.out;
  EXPECT_EQ(whole.out, "minivmm trace: wrote " + dir + "/whole.json (" +
                           std::to_string(lines.size() - 1) + " exits)\n");
  EXPECT_NE(Slurp(dir + "/whole.json").find("\"stop: guest shutdown\""), std::string::npos);

  std::ofstream cut(dir + "/cut.jsonl");
  for (size_t i = 0; i + 1 < lines.size(); ++i) cut << lines[i] << "\n";
  cut.close();
  Outcome o = Minivmm("trace " + dir + "/cut.jsonl -o " + dir + "/cut.json");
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("the trace was cut short: no trace_end line"), std::string::npos) << o.out;
  EXPECT_NE(Slurp(dir + "/cut.json").find("\"stop: trace cut short\""), std::string::npos);
}

// --- typos in the guest command line ---

// The message the guest itself prints for a command line (given the
// built-in guest as --kernel, the host leaves the check to it), without its
// console's "guest: " prefix; the guest's status must be 2 (bad command line).
std::string GuestSays(const std::string& args) {
  const Outcome o = Minivmm("run -q --kernel " + std::string(MINIVMM_GUEST_ELF) + " " + args);
  EXPECT_EQ(o.status, 2) << args << "\n" << o.out;
  const std::string line = o.out.substr(0, o.out.find('\n'));
  EXPECT_EQ(line.rfind("guest: ", 0), 0u) << line;
  return line.substr(std::string("guest: ").size());
}

TEST(CliCmdlineTest, TyposAreUsageErrorsWithTheGuestsOwnLineBeforeAnythingRuns) {
  REQUIRE_KVM();
  for (const std::string& args :
       {std::string("--workload nosuch"), std::string("--workload hello,nosuch=1"),
        std::string("--workload hello,lines=0x"), std::string("--pvops nosuch:optimized"),
        std::string("--pvops tls:eager"), std::string("--cmdline bogus=1")}) {
    const std::string guest_line = GuestSays(args);
    Outcome o = Minivmm("run " + args);
    EXPECT_EQ(o.status, 2) << args << "\n" << o.out;
    EXPECT_EQ(o.out, "minivmm: " + guest_line + "\n") << args;
  }
}

TEST(CliCmdlineTest, BenchRefusesAnUnknownWorkloadBeforeAnyVmRuns) {
  // The guest's line for the same workload, as the bench would have given it.
  REQUIRE_KVM();
  const std::string guest_line = GuestSays("--workload nosuch");
  for (const char* workloads : {"nosuch", "irq,nosuch", "irq:nosuch=3", "irq:loops=0"}) {
    Outcome o = Minivmm(std::string("bench --workloads ") + workloads + " --repeat 1");
    EXPECT_EQ(o.status, 2) << workloads << "\n" << o.out;
    EXPECT_EQ(Lines(o.out), 1u) << o.out;
    EXPECT_EQ(o.out.rfind("minivmm bench: ", 0), 0u) << o.out;
  }
  EXPECT_EQ(Minivmm("bench --workloads nosuch --repeat 1").out,
            "minivmm bench: " + guest_line + "\n");
}

// --- a bench stopped early keeps what it measured ---

struct Stopped {
  int status;
  std::string err;  // stderr: the progress lines and the stop line
  json record;
  std::string csv;
};

// `bench --workloads irq --backend pv --repeat 1 --configurations ...`: a
// baseline and a run for each configuration it selects (with naive, 6 of
// them, all of which apply under pv: enough runs to stop in the middle of,
// and a VM per run fewer than the whole list's).
constexpr char kStopConfigurations[] = "irq_restore,fpu_switch,tls,optimized,xen";
size_t PvConfigurations() {
  return minivmm::cli::SelectBenchConfigurations(kStopConfigurations)->size();
}
size_t PlannedRuns() { return 2 * PvConfigurations(); }

// That bench, sent `signo` once it has printed `after` progress lines.
Stopped StopBench(int signo, int after, const std::string& name) {
  const std::string dir = Dir(name);
  const std::string err = dir + "/stderr", rec = dir + "/b.json", csv = dir + "/b.csv";
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = freopen(err.c_str(), "w", stderr);
    (void)f;
    FILE* o = freopen("/dev/null", "w", stdout);
    (void)o;
    execl(MINIVMM_BIN, MINIVMM_BIN, "bench", "--workloads", "irq", "--backend", "pv", "--repeat",
          "1", "--configurations", kStopConfigurations, "--json", rec.c_str(), "--csv", csv.c_str(),
          nullptr);
    _exit(127);
  }
  auto progress = [&] {
    size_t n = 0;
    std::istringstream in(Slurp(err));
    for (std::string line; std::getline(in, line);) n += line.rfind("bench [", 0) == 0;
    return n;
  };
  int raw = 0;
  bool exited = false;
  for (int i = 0; i < 6000 && progress() < static_cast<size_t>(after); ++i) {
    if (waitpid(pid, &raw, WNOHANG) == pid) {
      exited = true;
      break;
    }
    usleep(20 * 1000);
  }
  if (!exited) {
    kill(pid, signo);
    waitpid(pid, &raw, 0);
  }
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw), Slurp(err),
          json::parse(Slurp(rec), nullptr, false), Slurp(csv)};
}

void ExpectKeptExactlyTheCompletedRuns(const Stopped& s, const std::string& reason) {
  ASSERT_TRUE(s.record.is_object()) << s.err;
  // The runs the bench said it completed, one progress line each.
  size_t printed = 0;
  std::istringstream in(s.err);
  for (std::string line; std::getline(in, line);) printed += line.rfind("bench [", 0) == 0;
  const json& runs = s.record["runs"];
  const json& inc = s.record["incomplete"];
  EXPECT_EQ(s.record["complete"], false);
  ASSERT_TRUE(inc.is_object()) << s.record.dump(1).substr(0, 2000);
  EXPECT_EQ(inc["reason"], reason);
  EXPECT_EQ(inc["exit_status"], s.status);
  EXPECT_EQ(runs.size(), printed) << s.err;
  EXPECT_EQ(inc["completed_runs"], printed);
  EXPECT_EQ(inc["planned_runs"], PlannedRuns());
  ASSERT_EQ(inc["missing"].size(), PlannedRuns() - printed);
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i]["index"], i);
    EXPECT_EQ(runs[i]["ok"], true);
  }
  for (size_t k = 0; k < inc["missing"].size(); ++k)
    EXPECT_EQ(inc["missing"][k]["index"], printed + k);
  const std::string stop_line = "minivmm bench: " + reason + " after " + std::to_string(printed) +
                                " of " + std::to_string(PlannedRuns()) +
                                " runs; writing what was measured\n";
  EXPECT_NE(s.err.find(stop_line), std::string::npos) << s.err;
  const std::string csv_end = "# incomplete: " + reason + "; " + std::to_string(printed) + " of " +
                              std::to_string(PlannedRuns()) +
                              " runs done (the bench record lists the rest)\n";
  ASSERT_GE(s.csv.size(), csv_end.size());
  EXPECT_EQ(s.csv.substr(s.csv.size() - csv_end.size()), csv_end);
}

TEST(BenchStopTest, SigintDuringTheBaselinesKeepsThemAndSaysWhatIsMissing) {
  REQUIRE_KVM();
  Stopped s = StopBench(SIGINT, 3, "sigint");
  EXPECT_EQ(s.status, 130) << s.err;
  ExpectKeptExactlyTheCompletedRuns(s, "stopped by SIGINT");
  // No workload run yet: no result, and only the CSV's header and its end.
  EXPECT_TRUE(s.record["results"].empty());
  EXPECT_EQ(Lines(s.csv), 2u) << s.csv;
  // Nothing to draw, but the page says what there is.
  const std::string rec =
      ::testing::TempDir() + "/output_" + std::to_string(getpid()) + "_sigint/b.json";
  Outcome r = Minivmm("report " + rec + " -o " + rec + ".html");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(Slurp(rec + ".html").find("Incomplete: stopped by SIGINT"), std::string::npos);
}

TEST(BenchStopTest, SigtermDuringTheRunsKeepsTheirResultsAndCompareAndReportSaySo) {
  REQUIRE_KVM();
  // Three runs after the baselines.
  Stopped s = StopBench(SIGTERM, static_cast<int>(PvConfigurations()) + 3, "sigterm");
  EXPECT_EQ(s.status, 143) << s.err;
  ExpectKeptExactlyTheCompletedRuns(s, "stopped by SIGTERM");
  // One result per workload configuration that has a run.
  const size_t workload_runs = s.record["runs"].size() - PvConfigurations();
  ASSERT_GE(workload_runs, 3u) << s.err;
  EXPECT_EQ(s.record["results"].size(), workload_runs);
  for (const json& r : s.record["results"]) EXPECT_EQ(r["runs"], 1);

  const std::string rec =
      ::testing::TempDir() + "/output_" + std::to_string(getpid()) + "_sigterm/b.json";
  const std::string note = std::to_string(s.record["runs"].size()) + " of " +
                           std::to_string(PlannedRuns()) + " runs done, " +
                           std::to_string(PlannedRuns() - s.record["runs"].size()) + " missing";
  Outcome c = Minivmm("compare " + rec + " " + rec);
  EXPECT_EQ(c.status, 0) << c.out;
  EXPECT_NE(c.out.find("A is incomplete: stopped by SIGTERM; " + note + "\n"), std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("B is incomplete: stopped by SIGTERM; " + note + "\n"), std::string::npos)
      << c.out;
  const std::string page = rec + ".html";
  Outcome r = Minivmm("report " + rec + " -o " + page);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("minivmm report: " + rec + " is incomplete: stopped by SIGTERM; " + note),
            std::string::npos)
      << r.out;
  EXPECT_NE(Slurp(page).find("Incomplete: stopped by SIGTERM"), std::string::npos);
}

// A failed run stops the bench: one line for it, no exit table, and the
// record holds the runs up to it.
TEST(BenchStopTest, AFailedRunIsOneLineAndStopsTheBenchWithWhatItMeasured) {
  REQUIRE_KVM();
  const std::string dir = Dir("failed");
  Outcome o =
      Minivmm("bench -q --workloads fault --backend native --repeat 1 --json " + dir + "/b.json");
  EXPECT_EQ(o.status, 1) << o.out;
  size_t failed_lines = 0;
  std::istringstream in(o.out);
  for (std::string line; std::getline(in, line);)
    failed_lines += line.find("FAILED") != std::string::npos;
  EXPECT_EQ(failed_lines, 1u) << o.out;
  EXPECT_NE(o.out.find("minivmm bench: FAILED: fault native naive rep 1 (backend=native "
                       "pvops=naive workload=fault): status 3, guest shut down with code 3; "
                       "the guest's "
                       "last line: "),
            std::string::npos)
      << o.out;
  EXPECT_EQ(o.out.find("exits by"), std::string::npos) << o.out;
  const json record = json::parse(Slurp(dir + "/b.json"), nullptr, false);
  ASSERT_TRUE(record.is_object());
  // native: the configurations that are not pv-only; their baselines, then
  // the first fault run, which failed; the others' fault runs are missing.
  const auto& all = minivmm::cli::BenchConfigurations();
  const size_t native = static_cast<size_t>(
      std::count_if(all.begin(), all.end(), [](const auto& c) { return !c.pv_only; }));
  ASSERT_GT(native, 1u);
  EXPECT_EQ(record["runs"].size(), native + 1);
  EXPECT_EQ(record["runs"].back()["ok"], false);
  EXPECT_EQ(record["failures"], 1);
  EXPECT_EQ(record["incomplete"]["reason"],
            "run " + std::to_string(native) + " failed: guest shut down with code 3");
  EXPECT_EQ(record["incomplete"]["missing"].size(), native - 1);
}

}  // namespace
}  // namespace output_test
