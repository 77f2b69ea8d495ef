// `minivmm info` and `run --json` report the host's KVM module and what the
// host probe (workload=hostprobe) measured about it. The expectations hold on
// every host: they are about agreement between independent observations and
// about each answer's own evidence, never a table keyed by module name or
// host: the same source passes on every KVM.
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/command.h"

namespace {

using ::minivmm::testing::Outcome;
using ::minivmm::testing::Shell;
using nlohmann::json;

using ::minivmm::testing::Minivmm;

// The value column of the info line starting with `label`, or "".
std::string InfoLine(const std::string& out, const std::string& label) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(label, 0) == 0 && line.size() > label.size() && line[label.size()] == ' ') {
      size_t value = line.find_first_not_of(' ', label.size());
      return value == std::string::npos ? "" : line.substr(value);
    }
  }
  return "";
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

TEST(CliTest, InfoNamesTheKvmModuleAndEachProbedBehaviour) {
  REQUIRE_KVM();
  Outcome o = Minivmm("info");
  ASSERT_EQ(o.status, 0) << o.out;
  std::string module = InfoLine(o.out, "KVM module");
  EXPECT_TRUE((std::set<std::string>{"kvm_pvm", "kvm_amd", "kvm_intel", "unknown"}.count(module)))
      << o.out;
  std::string ring0 = InfoLine(o.out, "guest ring 0");
  std::string nm = InfoLine(o.out, "ring-3 #NM");
  std::string vmcall = InfoLine(o.out, "vmcall");
  EXPECT_TRUE(StartsWith(ring0, "emulated (") || StartsWith(ring0, "native (")) << o.out;
  EXPECT_TRUE(StartsWith(nm, "delivered (") || StartsWith(nm, "not delivered (")) << o.out;
  EXPECT_TRUE(StartsWith(vmcall, "handled in the kernel (") ||
              StartsWith(vmcall, "not handled in the kernel ("))
      << o.out;
  EXPECT_NE(InfoLine(o.out, "host probe"), "") << o.out;
}

TEST(CliTest, InfoJsonHasTheProbedBehavioursAsBooleans) {
  REQUIRE_KVM();
  Outcome o = Shell(std::string(MINIVMM_BIN) + " info --json 2>/dev/null");
  ASSERT_EQ(o.status, 0) << o.out;
  json host = json::parse(o.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(host.is_object()) << o.out;
  EXPECT_TRUE(host["kvm_module"].is_string());
  // Which configuration of the module: every parameter of kvm and of it,
  // as /sys/module has them (kvm.halt_poll_ns is in every kernel's kvm).
  ASSERT_TRUE(host["kvm_parameters"].is_object()) << o.out;
  EXPECT_TRUE(host["kvm_parameters"]["kvm.halt_poll_ns"].is_string()) << o.out;
  for (const auto& [name, value] : host["kvm_parameters"].items()) {
    EXPECT_TRUE(name.rfind("kvm.", 0) == 0 ||
                name.rfind(host["kvm_module"].get<std::string>() + ".", 0) == 0)
        << name;
  }
  for (const char* key : {"ring0_emulated", "ring3_nm", "vmcall_in_kernel"})
    EXPECT_TRUE(host[key].is_boolean()) << key << ": " << host["probe"]["evidence"].dump();
}

// One `run --json`: its record holds the probe's answers (a hostprobe run of
// its own) and what this run's guest detected by itself.
TEST(CliTest, RunRecordHasTheProbeAndAgreesWithTheRunsOwnGuest) {
  REQUIRE_KVM();
  std::string path = ::testing::TempDir() + "/probe_run.json";
  Outcome o = Minivmm("run -q --workload hello,lines=1 --json " + path);
  ASSERT_EQ(o.status, 0) << o.out;
  std::ifstream in(path);
  json record = json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(record.is_object());
  EXPECT_EQ(record["schema_version"], 2);
  json host = record["provenance"]["host"];
  ASSERT_TRUE(host.is_object()) << record["provenance"].dump(2);
  ASSERT_TRUE(host["kvm_module"].is_string());
  json probe = host["probe"];
  std::string evidence = probe["evidence"].dump();
  ASSERT_TRUE(host["ring0_emulated"].is_boolean()) << evidence;
  ASSERT_TRUE(host["ring3_nm"].is_boolean()) << evidence;
  ASSERT_TRUE(host["vmcall_in_kernel"].is_boolean()) << evidence;
  ASSERT_TRUE(host["guest_detected"]["ring3_nm"].is_boolean()) << host.dump(2);

  // Two independent observations of ring-3 #NM: the probe's guest and this
  // run's own guest (kernel.ring3_nm, also in the record's guest reports).
  bool probe_nm = host["ring3_nm"].get<bool>();
  EXPECT_EQ(probe_nm, host["guest_detected"]["ring3_nm"].get<bool>());
  EXPECT_EQ(record["guest"]["reports"]["kernel.ring3_nm"], probe_nm ? 1 : 0);

  // Ring 0: the emulator's count against the probe's loop, and this run's
  // own count: a host that emulates ring 0 emulated this run too.
  uint64_t loop = probe["loop_insns"].get<uint64_t>();
  EXPECT_EQ(loop, 20001u);  // workload=hostprobe's default: 2 x 10000 + 1
  ASSERT_TRUE(probe["insn_emulation"].is_number()) << evidence;
  uint64_t emulated = probe["insn_emulation"].get<uint64_t>();
  uint64_t run_emulated =
      record["host_counters"]["deltas"].value("insn_emulation", static_cast<uint64_t>(0));
  if (host["ring0_emulated"].get<bool>()) {
    EXPECT_GE(emulated, loop);
    EXPECT_GT(run_emulated, 0u);
  } else {
    EXPECT_LT(emulated, loop);
  }

  // vmcall: handled means it came back with KVM's -KVM_ENOSYS; not handled
  // means it did not come back while the probe waited.
  if (host["vmcall_in_kernel"].get<bool>()) {
    EXPECT_EQ(probe["vmcall_rax"], -1000) << evidence;
  } else {
    EXPECT_TRUE(probe["vmcall_rax"].is_null()) << evidence;
    EXPECT_GE(probe["vmcall_wait_ns"].get<int64_t>(), 250'000'000) << evidence;
  }
}

}  // namespace

namespace {

// A `run --json --workload none` with the probe cache in `cache`; its
// record's provenance.host.
json HostOfRun(const std::string& cache, const std::string& extra = "") {
  const std::string path = ::testing::TempDir() + "/probe_cache_run.json";
  std::remove(path.c_str());
  Outcome o = Shell("MINIVMM_CACHE_DIR=" + cache + " " + std::string(MINIVMM_BIN) +
                    " run -q --workload none --json " + path + " " + extra);
  EXPECT_EQ(o.status, 0) << o.out;
  std::ifstream in(path);
  json record = json::parse(in, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(record.is_object()) << o.out;
  return record.is_object() ? record["provenance"]["host"] : json();
}

// The cache's files (one per key).
std::vector<std::string> CacheFiles(const std::string& cache) {
  Outcome o = Shell("ls " + cache);
  std::vector<std::string> files;
  std::istringstream in(o.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) files.push_back(line);
  return files;
}

// The host probe runs once per host: the first record measures it and keeps
// it, the next ones read it (probe.cached), with the same answers;
// --reprobe measures again; a corrupt cache file is a miss, rewritten. (Each
// kind of bad file is a miss: tests/cli/probe_cache_test.cc, with no probe.)
TEST(CliTest, TheHostProbeIsMeasuredOnceAndThenReadFromTheCache) {
  REQUIRE_KVM();
  const std::string cache = ::testing::TempDir() + "/probe_cache";
  Shell("rm -rf " + cache);
  const json first = HostOfRun(cache);
  ASSERT_TRUE(first.contains("probe")) << first.dump();
  EXPECT_EQ(first["probe"]["cached"], false) << first.dump();
  const std::vector<std::string> files = CacheFiles(cache);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].rfind("host-probe-", 0), 0u) << files[0];

  const json second = HostOfRun(cache);
  EXPECT_EQ(second["probe"]["cached"], true) << second.dump();
  for (const char* key : {"ring0_emulated", "ring3_nm", "vmcall_in_kernel"})
    EXPECT_EQ(second[key], first[key]) << key;
  EXPECT_EQ(second["probe"]["evidence"], first["probe"]["evidence"]);
  EXPECT_EQ(second["probe"]["runs"], first["probe"]["runs"]);

  const json again = HostOfRun(cache, "--reprobe");
  EXPECT_EQ(again["probe"]["cached"], false) << again.dump();
  for (const char* key : {"ring0_emulated", "ring3_nm", "vmcall_in_kernel"})
    EXPECT_EQ(again[key], first[key]) << key;

  // A corrupt file under the same name: measured again, rewritten.
  std::ofstream(cache + "/" + files[0]) << "not json";
  EXPECT_EQ(HostOfRun(cache)["probe"]["cached"], false);
  EXPECT_EQ(HostOfRun(cache)["probe"]["cached"], true);
  EXPECT_EQ(CacheFiles(cache).size(), 1u);
}

}  // namespace
