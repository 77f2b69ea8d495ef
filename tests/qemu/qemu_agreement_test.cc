// The same guest image booted by QEMU (PVH entry, backend=native) and by
// minivmm, with the same command line: the guest's own results must agree.
//
// Under QEMU the guest has no report hypercall and prints each report line
// on the console as "report: key=value"; under minivmm the reports land in
// the JSON run record (`minivmm run --json`). Every key both sides report is
// compared, except the ones listed in Excluded() with the reason each one
// legitimately differs between the two machines.
#include <fstream>
#include <map>
#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/command.h"
#include "tests/qemu/qemu_run.h"

namespace {

using minivmm::testing::ConsoleLines;
using minivmm::testing::Output;
using minivmm::testing::Quote;
using minivmm::testing::RunCommand;
using Reports = std::map<std::string, std::string>;

// "report: key=value" lines anywhere in the console (the first one can
// follow the firmware's output on the same line).
Reports ConsoleReports(const std::string& text) {
  Reports reports;
  for (const std::string& line : ConsoleLines(text)) {
    const size_t at = line.find("report: ");
    if (at == std::string::npos) continue;
    const std::string kv = line.substr(at + 8);
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) reports[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return reports;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Keys that differ between the two machines for reasons outside the guest.
bool Excluded(std::string_view key) {
  // Timing: TSC cycles, different on every run anyway.
  if (key.find(".tsc_") != std::string_view::npos) return true;
  // Under QEMU the report records themselves are console lines, so the
  // console carries far more bytes and lines there.
  if (key.starts_with("kernel.console.")) return true;
  // No hypercalls under QEMU (reports are printed, shutdown is the debug-exit
  // port); the final record still counts itself as a report, so even those
  // keys differ. (Workload-level <w>.hc_exits/<w>.hc_ops are 0 on both with
  // backend=native and are compared.)
  if (key.starts_with("kernel.hc")) return true;
  // Whether ring-3 SSE with CR0.TS set raises #NM depends on the host:
  // QEMU TCG (and real KVM) deliver it, the software-KVM hosts do not
  // (docs/hosts.md). The guest detects it (kernel.ring3_nm) and then takes
  // lazy #NM traps instead of preloads, which moves the FPU counters and the
  // CR0 writes (clts per trap, stts/clts around preloads).
  if (key == "kernel.ring3_nm") return true;
  for (std::string_view fpu : {".nm_traps", ".fpu_preloads", ".fpu_owner_preloads", ".fpu_saves",
                               ".fpu_restores", ".cr0_writes"}) {
    if (EndsWith(key, fpu)) return true;
  }
  // Whether `int 0x80` reaches its DPL-3 gate or raises #UD (the guest's
  // fallback path) also depends on the host: same system calls, other path.
  if (EndsWith(key, ".syscall_ud_fallbacks")) return true;
  return false;
}

struct Case {
  const char* workload;  // tiny sizes: ring 0 is emulated on some hosts
  const char* accel;     // "tcg" or "kvm"
};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = std::string(info.param.workload) + "_" + info.param.accel;
  for (char& c : name) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class QemuAgreementTest : public ::testing::TestWithParam<Case> {};

TEST_P(QemuAgreementTest, GuestReportsTheSameResultsUnderQemuAndMinivmm) {
  if (std::string_view(MINIVMM_QEMU).empty()) {
    GTEST_FAIL()
        << "qemu-system-x86_64 was not found when this build was configured "
           "(install Debian's qemu-system-x86, e.g. scripts/quickstart.sh, and re-run cmake)";
  }
  const Case c = GetParam();
  REQUIRE_KVM();
  const std::string cmdline = std::string("backend=native workload=") + c.workload;

  const Output qemu = RunCommand(std::string(MINIVMM_QEMU) + " -kernel " +
                                     Quote(MINIVMM_GUEST_ELF) + " -append " + Quote(cmdline) +
                                     " -nographic -nic none -no-reboot -m 128M"
                                     " -device isa-debug-exit,iobase=0xf4,iosize=4 -accel " +
                                     c.accel,
                                 60);
  // isa-debug-exit: QEMU exits with (code << 1) | 1, so guest code 0 is 1.
  ASSERT_EQ(qemu.status, 1) << "QEMU did not see guest code 0:\n" << qemu.text;
  const Reports q = ConsoleReports(qemu.text);
  ASSERT_FALSE(q.empty()) << qemu.text;
  EXPECT_EQ(q.count("config.backend"), 1u) << "the first report line was not recognised:\n"
                                           << qemu.text;
  EXPECT_EQ(q.at("kernel.exit_code"), "0");
  EXPECT_EQ(q.at("check.failed"), "0");

  const std::string json = ::testing::TempDir() + "qemu_agreement_" + CaseName({c, 0}) + ".json";
  const Output vmm =
      RunCommand(std::string(MINIVMM_BIN) + " run --kernel " + Quote(MINIVMM_GUEST_ELF) +
                     " --cmdline " + Quote(cmdline) + " --json " + Quote(json) + " --timeout 60",
                 90);
  ASSERT_EQ(vmm.status, 0) << vmm.text;
  std::ifstream in(json);
  ASSERT_TRUE(in.good()) << json;
  const nlohmann::json record = nlohmann::json::parse(in);
  Reports m;
  // Integers are JSON numbers in the record, in the guest's own decimal form.
  for (const auto& [key, value] : record.at("guest").at("reports").items())
    m[key] = value.is_string() ? value.get<std::string>() : value.dump();
  EXPECT_EQ(m.at("kernel.exit_code"), "0");
  EXPECT_EQ(m.at("check.failed"), "0");

  size_t compared = 0;
  for (const auto& [key, value] : m) {
    if (Excluded(key)) continue;
    ++compared;
    auto it = q.find(key);
    if (it == q.end()) {
      ADD_FAILURE() << key << " reported under minivmm only";
      continue;
    }
    EXPECT_EQ(it->second, value) << key << " (QEMU vs minivmm)";
  }
  for (const auto& [key, value] : q) {
    if (!Excluded(key) && m.count(key) == 0) ADD_FAILURE() << key << " reported under QEMU only";
  }
  // The comparison must have covered the workload's own results.
  const std::string w = std::string(c.workload).substr(0, std::string(c.workload).find(','));
  EXPECT_EQ(m.count("check." + w + ".passed"), 1u) << w;
  EXPECT_GT(compared, 50u);
}

// Tiny sizes: QEMU TCG and the software-KVM hosts both run ring 0 slowly.
// -accel kvm boots the firmware in emulated ring 0 on the software-KVM
// hosts (~9 s), so only two workloads use it.
INSTANTIATE_TEST_SUITE_P(
    Workloads, QemuAgreementTest,
    ::testing::Values(Case{"hello,lines=2", "tcg"}, Case{"ctx,tasks=2,rounds=3", "tcg"},
                      Case{"pipe,rounds=3", "tcg"}, Case{"irq,loops=5", "tcg"},
                      Case{"cpa,pages=8", "tcg"}, Case{"fpu,threads=2,rounds=8", "tcg"},
                      Case{"hello,lines=2", "kvm"}, Case{"ctx,tasks=2,rounds=3", "kvm"}),
    CaseName);

}  // namespace
