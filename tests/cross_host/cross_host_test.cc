// The cross-host test: the bench matrix (ctx, ctx tls=same, pipe, irq, cpa,
// fpu; both backends; all naive, each op optimized alone, all optimized) as
// run on every KVM the test command reached, one `minivmm bench` record per
// KVM (MINIVMM_CROSS_HOST_RECORDS=a.json:b.json; scripts/quickstart.sh test
// makes them on this host's KVM and on a nested kvm_amd, or, where the host
// has none, on the nested kvm_amd and on it again with npt=0: two KVMs are
// two modules, or one module with other parameters). Without the
// variable the test runs the bench itself on this machine's KVM: the
// per-host checks then run, and the comparison between hosts fails, since
// one record compares nothing.
//
// What must hold (docs/exit-model.md "Counts that depend on the host"):
//  - On every host, every run: the guest's FPU events are the closed forms
//    of tests/common/fpu_model.h for what the guest detected there
//    (kernel.ring3_nm), and the VMM's CR0-write ops and exits follow from
//    them.
//  - Between two hosts, for the same workload, backend and pvops: every
//    count the VMM attributes (exits by reason, by device, per vCPU, by
//    hypercall, by cause, GDT stores, timer injections) is equal, except
//    the documented host-dependent ones, and the difference of each of
//    those is exactly what the FPU model predicts from the two hosts'
//    detected features.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/experiment.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/command.h"
#include "tests/common/fpu_model.h"

namespace minivmm::testing {
namespace {

using nlohmann::json;

// The workloads of the matrix; the bench runs its configurations of each (the
// xen family under pv only).
constexpr char kWorkloads[] = "ctx,ctx:tls=same,pipe,irq,cpa,fpu";

struct HostRecord {
  std::string path;
  json bench;
};

std::vector<HostRecord>& Records() {
  static std::vector<HostRecord> records;
  return records;
}

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return json::parse(s.str(), nullptr, /*allow_exceptions=*/false);
}

// Reads the records named by MINIVMM_CROSS_HOST_RECORDS, or makes one here.
::testing::AssertionResult LoadRecords() {
  if (!Records().empty()) return ::testing::AssertionSuccess();
  std::vector<std::string> paths;
  if (const char* env = std::getenv("MINIVMM_CROSS_HOST_RECORDS"); env != nullptr && *env) {
    paths = absl::StrSplit(env, ':', absl::SkipEmpty());
  } else {
    if (!HaveKvmDevice())
      return ::testing::AssertionFailure()
             << "no MINIVMM_CROSS_HOST_RECORDS and no usable /dev/kvm to make one";
    std::string path =
        ::testing::TempDir() + "/cross_host_" + std::to_string(getpid()) + "_here.json";
    // The counted guest: its counts are checked against the exits.
    Outcome o = Shell(std::string(MINIVMM_BIN) + " bench -q --backend both --repeat 1" +
                      " --guest-counters on" + " --workloads " + kWorkloads + " --json " + path +
                      " >/dev/null");
    if (o.status != 0)
      return ::testing::AssertionFailure() << "minivmm bench failed here:\n" << o.out;
    paths.push_back(path);
  }
  for (const std::string& p : paths) {
    if (access(p.c_str(), R_OK) != 0)
      return ::testing::AssertionFailure() << "cannot read " << p << " (give absolute paths)";
    json j = ReadJson(p);
    if (j.is_discarded() || j.value("schema", "") != "minivmm.bench")
      return ::testing::AssertionFailure() << p << " is not a minivmm bench record";
    // The guest's own counts are part of what is checked: a record of the
    // uncounted kernel has none.
    if (j["settings"].value("guest_counters", json(true)) != json(true))
      return ::testing::AssertionFailure()
             << p << " was made without the counted guest (minivmm bench --guest-counters on)";
    Records().push_back({p, std::move(j)});
  }
  return ::testing::AssertionSuccess();
}

// Which KVM made a record: its vendor module and the parameters of it and
// of kvm (provenance.host.kvm_parameters). Two records of one identity came
// from one KVM and compare nothing.
json KvmIdentity(const HostRecord& h) {
  const json& host = h.bench["provenance"]["host"];
  return {{"kvm_module", host.value("kvm_module", "")},
          {"kvm_parameters", host.value("kvm_parameters", json::object())}};
}

// What tells b's KVM from a's, for the summary: "kvm_pvm vs kvm_amd", or
// the parameters whose values differ ("kvm_amd.npt=Y vs N").
std::string KvmDifference(const json& a, const json& b) {
  if (a["kvm_module"] != b["kvm_module"])
    return a["kvm_module"].get<std::string>() + " vs " + b["kvm_module"].get<std::string>();
  std::vector<std::string> differ;
  const json &pa = a["kvm_parameters"], &pb = b["kvm_parameters"];
  auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  for (const auto& [name, value] : pa.items()) {
    const std::string other = pb.contains(name) ? text(pb[name]) : "(none)";
    if (text(value) != other) differ.push_back(name + "=" + text(value) + " vs " + other);
  }
  for (const auto& [name, value] : pb.items())
    if (!pa.contains(name)) differ.push_back(name + "=(none) vs " + text(value));
  return absl::StrJoin(differ, ", ");
}

std::string Key(const json& run) {
  return run["workload_spec"].get<std::string>() + " backend=" + run["backend"].get<std::string>() +
         " pvops=" + run["pvops"].get<std::string>();
}

uint64_t Report(const json& run, const std::string& key) {
  const json& reports = run["record"]["guest"]["reports"];
  if (!reports.contains(key)) {
    ADD_FAILURE() << Key(run) << ": the guest did not report " << key;
    return 0;
  }
  // A JSON number since run schema version 2; a string of digits before.
  const json& v = reports[key];
  return v.is_number() ? v.get<uint64_t>() : std::stoull(v.get<std::string>());
}

std::string ReportText(const json& run, const std::string& key) {
  const json& reports = run["record"]["guest"]["reports"];
  if (!reports.contains(key)) return "";
  const json& v = reports[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

FpuEvents GuestEvents(const json& run, const std::string& prefix) {
  return {Report(run, prefix + ".nm_traps"), Report(run, prefix + ".fpu_preloads"),
          Report(run, prefix + ".fpu_owner_preloads"), Report(run, prefix + ".fpu_saves")};
}

// The whole run's FPU events as the model predicts them from what the guest
// detected on its host. The fpu workload's kernel threads use SSE in ring 0,
// which traps on every host: their events are the guest's own (and compared
// between hosts as host-independent).
FpuEvents ModelEvents(const json& run) {
  const bool ring3_nm = Report(run, "kernel.ring3_nm") != 0;
  const std::string workload = run["workload"].get<std::string>();
  const std::string spec = run["workload_spec"].get<std::string>();
  FpuEvents e = BootProbeFpuEvents(ring3_nm);
  if ((workload == "ctx" || workload == "pipe") && !absl::StrContains(spec, "fpu=none")) {
    e += RingFpuEvents(Report(run, workload + ".tasks"), Report(run, workload + ".rounds"),
                       ring3_nm, ReportText(run, "config.pvops.fpu_switch") == "eager");
  } else if (workload == "fpu") {
    e += GuestEvents(run, "fpu");
  }
  return e;
}

// Every count the VMM attributes itself, flattened to "section.a.b" keys.
void Flatten(const json& j, const std::string& prefix, std::map<std::string, int64_t>* out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) Flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i)
      Flatten(j[i], prefix + "[" + std::to_string(i) + "]", out);
  } else if (j.is_number()) {
    (*out)[prefix] = j.get<int64_t>();
  }
}

std::map<std::string, int64_t> VmmCounts(const json& run) {
  std::map<std::string, int64_t> out;
  const json& r = run["record"];
  for (const char* section : {"exits", "hypercalls", "causes"}) Flatten(r[section], section, &out);
  out["result.exit_code"] = r["result"]["exit_code"].get<int64_t>();
  return out;
}

// The counts that depend on the host, each with what its difference between
// two hosts must be, from the two runs' modelled CR0 writes (ops) and CR0
// write exits. Everything else must be equal.
struct Cr0 {
  int64_t ops, exits;
};
Cr0 ModelCr0(const json& run) {
  if (run["backend"] == "native") return {0, 0};  // raw mov to CR0: no exit
  const FpuEvents e = ModelEvents(run);
  const std::string variant = ReportText(run, "config.pvops.fpu_switch");
  return {static_cast<int64_t>(Cr0Writes(variant, e)),
          static_cast<int64_t>(
              Cr0WriteExits(variant, ReportText(run, "config.pvops.batch") == "on", e))};
}

// Expected difference (b - a) of a host-dependent count, or nullopt when the
// key must be equal.
std::optional<int64_t> HostDependentDelta(const std::string& key, Cr0 a, Cr0 b) {
  // A vCPU's causes and hypercalls (exits.per_vcpu[N].causes.X,
  // .hypercalls.X) depend on the host as the run's do (the bench runs have
  // one vCPU); its wasted exits are not compared, as the run's are not.
  if (absl::StartsWith(key, "exits.per_vcpu[")) {
    const std::string rest = key.substr(key.find("].") + 2);
    if (absl::StartsWith(rest, "wasted.")) return std::nullopt;
    if (absl::StartsWith(rest, "causes."))
      return HostDependentDelta("causes.causes." + rest.substr(7), a, b);
    if (absl::StartsWith(rest, "hypercalls."))
      return HostDependentDelta("hypercalls.calls." + rest.substr(11), a, b);
  }
  const int64_t ops = b.ops - a.ops, exits = b.exits - a.exits;
  static const std::set<std::string> kCr0Ops = {"causes.causes.cr0_write.ops",
                                                "hypercalls.calls.fpu_taskswitch.ops"};
  static const std::set<std::string> kCr0Exits = {
      "causes.causes.cr0_write.exits", "hypercalls.calls.fpu_taskswitch.exits",
      // every CR0-write exit is one `out` to the hypercall port
      "exits.by_reason.io", "exits.pio_by_device.hypercall", "exits.total",
      "exits.per_vcpu[0].by_reason.io", "exits.per_vcpu[0].total",
      "exits.per_vcpu[0].hypercall_exits.fpu_taskswitch"};
  // CR0 writes queued in a context switch's multicall are entries, not exits.
  static const std::set<std::string> kQueued = {"causes.causes.multicall.ops"};
  if (kCr0Ops.count(key)) return ops;
  if (kCr0Exits.count(key)) return exits;
  if (kQueued.count(key)) return ops - exits;
  // How the entries spread over multicall sizes moves with them; their sum
  // (the multicall exits) is checked equal above.
  if (absl::StartsWith(key, "causes.multicall_entries_histogram_log2")) return std::nullopt;
  return 0;
}

TEST(CrossHostTest, RecordsCoverTheWholeMatrix) {
  ASSERT_TRUE(LoadRecords());
  for (const HostRecord& h : Records()) {
    std::set<std::string> workloads, configurations, backends;
    for (const json& run : h.bench["runs"]) {
      EXPECT_TRUE(run["ok"].get<bool>()) << h.path << ": " << Key(run) << ": " << run["failure"];
      workloads.insert(run["workload_spec"].get<std::string>());
      configurations.insert(run["configuration"].get<std::string>());
      backends.insert(run["backend"].get<std::string>());
    }
    EXPECT_EQ(workloads,
              (std::set<std::string>{"none", "ctx", "ctx,tls=same", "pipe", "irq", "cpa", "fpu"}))
        << h.path;
    // The bench's own list (cli/experiment.h): every configuration ran.
    std::set<std::string> listed;
    for (const auto& c : minivmm::cli::BenchConfigurations()) listed.insert(c.name);
    EXPECT_EQ(configurations, listed) << h.path;
    EXPECT_EQ(backends, (std::set<std::string>{"pv", "native"})) << h.path;
  }
}

TEST(CrossHostTest, OnEveryHostTheFpuCountsFollowWhatTheGuestDetected) {
  ASSERT_TRUE(LoadRecords());
  for (const HostRecord& h : Records()) {
    for (const json& run : h.bench["runs"]) {
      SCOPED_TRACE(h.path + ": " + Key(run));
      EXPECT_EQ(GuestEvents(run, "kernel"), ModelEvents(run));
      const Cr0 model = ModelCr0(run);
      const json& cr0 = run["record"]["causes"]["causes"]["cr0_write"];
      EXPECT_EQ(cr0["ops"].get<int64_t>(), model.ops);
      EXPECT_EQ(cr0["exits"].get<int64_t>(), model.exits);
      if (run["backend"] == "pv") {
        EXPECT_EQ(static_cast<int64_t>(Report(run, "kernel.cr0_writes")), model.ops);
      }
    }
  }
}

// CR3 writes are host-independent (EveryOtherCountIsTheSameOnEveryHost
// compares them between hosts); on each host they equal the guest's own
// count under pv and are 0 under native.
TEST(CrossHostTest, OnEveryHostCr3WritesAreTheGuestsOwnCount) {
  ASSERT_TRUE(LoadRecords());
  for (const HostRecord& h : Records()) {
    for (const json& run : h.bench["runs"]) {
      SCOPED_TRACE(h.path + ": " + Key(run));
      const json& cr3 = run["record"]["causes"]["causes"]["cr3_write"];
      const int64_t guest = static_cast<int64_t>(Report(run, "kernel.cr3_writes"));
      EXPECT_GE(guest, 1);  // the boot load
      EXPECT_EQ(cr3["ops"].get<int64_t>(), run["backend"] == "pv" ? guest : 0);
    }
  }
}

TEST(CrossHostTest, EveryOtherCountIsTheSameOnEveryHost) {
  ASSERT_TRUE(LoadRecords());
  // The premise of the test: records from two KVMs at least. One record
  // (no MINIVMM_CROSS_HOST_RECORDS, or a machine whose test command reached
  // only one KVM) compares nothing, so it fails rather than pass.
  ASSERT_GE(Records().size(), 2u)
      << "cross-host: records from at least two KVMs are needed to compare them; got "
      << Records().size() << " (" << Records()[0].path
      << "). Give MINIVMM_CROSS_HOST_RECORDS=a.json:b.json, one `minivmm bench` record per KVM "
         "(scripts/quickstart.sh test makes them on this host's KVM and on a nested kvm_amd)";
  // ... and from two KVMs, not one KVM twice: each record's module or one
  // of its parameters differs from every other's.
  for (size_t i = 0; i < Records().size(); ++i)
    for (size_t j = i + 1; j < Records().size(); ++j)
      ASSERT_NE(KvmIdentity(Records()[i]), KvmIdentity(Records()[j]))
          << "cross-host: " << Records()[i].path << " and " << Records()[j].path
          << " were made on the same KVM (one module, the same parameters): they compare nothing";
  const HostRecord& a = Records()[0];
  std::map<std::string, const json*> a_runs;
  for (const json& run : a.bench["runs"]) a_runs[Key(run)] = &run;
  for (size_t i = 1; i < Records().size(); ++i) {
    const HostRecord& b = Records()[i];
    size_t compared = 0, equal = 0, explained = 0;
    for (const json& run_b : b.bench["runs"]) {
      auto it = a_runs.find(Key(run_b));
      ASSERT_NE(it, a_runs.end()) << Key(run_b) << " is in " << b.path << " only";
      const json& run_a = *it->second;
      SCOPED_TRACE(Key(run_b) + " on " + a.path + " vs " + b.path);
      const Cr0 cr0_a = ModelCr0(run_a), cr0_b = ModelCr0(run_b);
      const auto counts_a = VmmCounts(run_a), counts_b = VmmCounts(run_b);
      for (const auto& [key, value_a] : counts_a) {
        auto found = counts_b.find(key);
        if (found == counts_b.end()) {
          ADD_FAILURE() << key << " missing on " << b.path;
          continue;
        }
        std::optional<int64_t> delta = HostDependentDelta(key, cr0_a, cr0_b);
        if (!delta) continue;
        ++compared;
        EXPECT_EQ(found->second - value_a, *delta)
            << key << ": " << value_a << " vs " << found->second;
        (*delta == 0 ? equal : explained) += found->second - value_a == *delta;
      }
      EXPECT_EQ(counts_a.size(), counts_b.size());
      // The multicall histogram's sum is host-independent.
      int64_t sum_a = 0, sum_b = 0;
      for (const auto& [k, v] : counts_a)
        if (absl::StartsWith(k, "causes.multicall_entries_histogram_log2")) sum_a += v;
      for (const auto& [k, v] : counts_b)
        if (absl::StartsWith(k, "causes.multicall_entries_histogram_log2")) sum_b += v;
      EXPECT_EQ(sum_a, sum_b);
    }
    std::cout << "cross-host: " << a.path << " vs " << b.path << " ("
              << KvmDifference(KvmIdentity(a), KvmIdentity(b)) << "): " << compared
              << " counts compared, " << equal << " equal, " << explained
              << " different exactly as the FPU model predicts\n";
  }
}

}  // namespace
}  // namespace minivmm::testing
