// The `minivmm` command as a user meets it: exit statuses for every way a
// run can end and for bad input (README.md "Exit status").
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/common/command.h"

namespace {

using ::minivmm::testing::Outcome;
using ::minivmm::testing::Shell;

Outcome Minivmm(const std::string& args) { return Shell(std::string(MINIVMM_BIN) + " " + args); }

std::string TempFile(const std::string& name, const std::string& contents) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

std::string Tiny(const std::string& name) {
  return std::string(MINIVMM_TINY_GUEST_DIR) + "/" + name + ".elf";
}

TEST(CliTest, UnknownFlagIsUsageError) { EXPECT_EQ(Minivmm("run --no-such-flag").status, 2); }
TEST(CliTest, NoSubcommandIsUsageError) { EXPECT_EQ(Minivmm("").status, 2); }
TEST(CliTest, BadBackendIsUsageError) { EXPECT_EQ(Minivmm("run --backend xen").status, 2); }
TEST(CliTest, HelpExitsZero) { EXPECT_EQ(Minivmm("run --help").status, 0); }

TEST(CliTest, MissingKernelIsVmmErrorNamingThePath) {
  Outcome o = Minivmm("run --kernel /nonexistent/guest.elf");
  EXPECT_EQ(o.status, 125);
  EXPECT_NE(o.out.find("/nonexistent/guest.elf"), std::string::npos) << o.out;
}

TEST(CliTest, TruncatedElfIsVmmError) {
  REQUIRE_KVM();
  Outcome o = Minivmm("run --kernel " + TempFile("truncated.elf",
                                                 "\x7f"
                                                 "ELF\x02\x01"));
  EXPECT_EQ(o.status, 125);
  EXPECT_NE(o.out.find("ELF"), std::string::npos) << o.out;
}

TEST(CliTest, NotAnElfIsVmmError) {
  REQUIRE_KVM();
  EXPECT_EQ(Minivmm("run --kernel " + TempFile("text.elf", std::string(4096, 'x'))).status, 125);
}

TEST(CliTest, MemoryTooSmallIsVmmError) {
  Outcome o = Minivmm("run --memory 2M");
  EXPECT_EQ(o.status, 125);
  EXPECT_NE(o.out.find("memory size"), std::string::npos) << o.out;
}

TEST(CliTest, MemoryTooLargeIsVmmError) { EXPECT_EQ(Minivmm("run --memory 64G").status, 125); }
TEST(CliTest, MemoryNotA2MiBMultipleIsVmmError) {
  EXPECT_EQ(Minivmm("run --memory 9M").status, 125);
}

TEST(CliTest, HelloRunsAndPrintsTheExitTable) {
  REQUIRE_KVM();
  Outcome o = Minivmm("run --workload hello,lines=2");
  EXPECT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("hello 2"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("exits by cause"), std::string::npos) << o.out;
}

TEST(CliTest, GuestCodeBecomesTheExitStatus) {
  REQUIRE_KVM();
  EXPECT_EQ(Minivmm("run --workload bogus").status, 2);
  EXPECT_EQ(Minivmm("run --workload fault,kind=ud").status, 3);
}

TEST(CliTest, TripleFaultHasItsOwnStatusAndPrintsRegisters) {
  REQUIRE_KVM();
  Outcome o = Minivmm("run --kernel " + Tiny("triple_fault"));
  EXPECT_EQ(o.status, 123);
  EXPECT_NE(o.out.find("rip="), std::string::npos) << o.out;
}

TEST(CliTest, HaltWithInterruptsOffHasItsOwnStatus) {
  REQUIRE_KVM();
  EXPECT_EQ(Minivmm("run --kernel " + Tiny("halt_irq_off")).status, 122);
}

TEST(CliTest, TimeoutIs124) {
  REQUIRE_KVM();
  Outcome o = Minivmm("run --timeout 0.3 --kernel " + Tiny("spin"));
  EXPECT_EQ(o.status, 124);
  EXPECT_NE(o.out.find("last console lines"), std::string::npos) << o.out;
}

TEST(CliTest, JsonRecordIsWritten) {
  REQUIRE_KVM();
  std::string path = ::testing::TempDir() + "/run.json";
  ASSERT_EQ(Minivmm("run -q --workload none --json " + path).status, 0);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"schema_version\": 1"), std::string::npos);
  EXPECT_NE(text.find("\"sha256:"), std::string::npos);
}

TEST(CliTest, TraceHasOneLinePerExit) {
  REQUIRE_KVM();
  std::string path = ::testing::TempDir() + "/trace.jsonl";
  ASSERT_EQ(Minivmm("run -q --kernel " + Tiny("null_hypercalls") + " --trace " + path).status, 0);
  std::ifstream in(path);
  int lines = 0, console = 0;
  for (std::string line; std::getline(in, line); ++lines)
    if (line.find("\"hypercall\":\"console_io\"") != std::string::npos) ++console;
  EXPECT_EQ(lines, 1001);
  EXPECT_EQ(console, 1000);
}

TEST(CliTest, InfoListsCapabilities) {
  REQUIRE_KVM();
  Outcome o = Minivmm("info");
  EXPECT_EQ(o.status, 0);
  EXPECT_NE(o.out.find("KVM_CAP_SYNC_REGS"), std::string::npos) << o.out;
}

}  // namespace

namespace {

// Starts minivmm on a guest that spins forever, sends `signo` after a
// moment, and returns the exit status and output.
Outcome StopWithSignal(int signo) {
  std::string out_path = ::testing::TempDir() + "/signal.out";
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = freopen(out_path.c_str(), "w", stderr);
    (void)f;
    execl(MINIVMM_BIN, MINIVMM_BIN, "run", "--timeout", "60", "--kernel",
          (std::string(MINIVMM_TINY_GUEST_DIR) + "/spin.elf").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  usleep(500 * 1000);
  kill(pid, signo);
  int raw = 0;
  waitpid(pid, &raw, 0);
  std::ifstream in(out_path);
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw),
          std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>())};
}

TEST(CliSignalTest, SigintStopsCleanlyWithStatisticsAnd130) {
  REQUIRE_KVM();
  Outcome o = StopWithSignal(SIGINT);
  EXPECT_EQ(o.status, 130);
  EXPECT_NE(o.out.find("stop requested"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("exits by reason"), std::string::npos) << o.out;
}

TEST(CliSignalTest, SigtermStopsCleanlyWithStatisticsAnd143) {
  REQUIRE_KVM();
  Outcome o = StopWithSignal(SIGTERM);
  EXPECT_EQ(o.status, 143);
  EXPECT_NE(o.out.find("exits by reason"), std::string::npos) << o.out;
}

}  // namespace
