// `minivmm run --sites --stacks FILE` (docs/sites.md): the exit table's
// "exits by site" section, the record's `sites` and the folded stacks, which
// add up to the run's exits exactly.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "cli/exit_codes.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/command.h"
#include "tests/common/pc_host.h"

// A namespace of the file's own: the test binaries are unity builds.
namespace sites_cli_test {
namespace {

using ::minivmm::testing::Minivmm;
using ::minivmm::testing::Outcome;
using nlohmann::json;

std::string Path(const std::string& name) {
  return ::testing::TempDir() + "/sites_cli_" + std::to_string(getpid()) + "_" + name;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SitesCliTest, SitesTableRecordAndFoldedStacksAddUpToTheExits) {
  REQUIRE_KVM();
  const Outcome o = Minivmm("run --workload ctx,tls=same --pvops naive --wasted --sites --stacks " +
                            Path("stacks.txt") + " --json " + Path("run.json"));
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("exits by site"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("wasted exits by site"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("keep a shadow of what was sent and skip unchanged values"),
            std::string::npos);
  EXPECT_NE(o.out.find("the operation is undone before anything used it: drop both"),
            std::string::npos);
  EXPECT_NE(o.out.find("<- LoadTls switch.cc:"), std::string::npos) << o.out;
  // batch:off (pvops=naive): the context switch's calls one exit each.
  EXPECT_NE(o.out.find("exits a batch could have carried: "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(": queue the run of calls in a lazy mode and send them as one multicall"),
            std::string::npos);

  const json record = json::parse(Slurp(Path("run.json")), nullptr, false);
  ASSERT_FALSE(record.is_discarded());
  ASSERT_TRUE(record.contains("sites"));
  EXPECT_EQ(record["sites"]["wasted_unplaced"], 0);
  uint64_t record_exits = 0;
  for (const json& stack : record["sites"]["stacks"])
    record_exits += stack["exits"].get<uint64_t>();
  EXPECT_EQ(record_exits, record["exits"]["total"].get<uint64_t>());

  // Folded: "cause;root;...;leaf count", root first, the cause as the root.
  std::istringstream folded(Slurp(Path("stacks.txt")));
  uint64_t folded_exits = 0, load_tls = 0;
  std::string line;
  while (std::getline(folded, line)) {
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    const uint64_t n = std::stoull(line.substr(space + 1));
    folded_exits += n;
    if (line.rfind("descriptor_update;", 0) == 0) {
      EXPECT_NE(line.find(";LoadTls;"), std::string::npos) << line;
      EXPECT_NE(line.find(";RawHypercall "), std::string::npos) << "the leaf is the exit: " << line;
      load_tls += n;
    }
  }
  EXPECT_EQ(folded_exits, record_exits);
  EXPECT_GT(load_tls, 0u);
}

// Exits per cause ("none" for an exit of no cause) as the record counts them.
std::map<std::string, uint64_t> RecordExitsByCause(const json& record) {
  std::map<std::string, uint64_t> by_cause;
  uint64_t caused = 0;
  for (const auto& [cause, c] : record["causes"]["causes"].items()) {
    if (c["exits"].get<uint64_t>() == 0) continue;
    by_cause[cause] = c["exits"].get<uint64_t>();
    caused += by_cause[cause];
  }
  const uint64_t total = record["exits"]["total"].get<uint64_t>();
  if (total > caused) by_cause["none"] = total - caused;
  return by_cause;
}

// Exits per cause as the trace's sites count them; every exit has a site
// whose innermost frame is named, and whose RIP is its stack's first frame.
void CountSites(const json& site, std::map<std::string, uint64_t>& by_cause) {
  ASSERT_TRUE(site.is_object()) << site;
  ++by_cause[site["cause"].get<std::string>()];
  ASSERT_TRUE(site["rip"].is_string()) << site;
  ASSERT_FALSE(site["stack"].empty()) << site;
  if (site.value("user", false)) return;  // ring 3: the raw RIP only
  EXPECT_FALSE(site["function"].get<std::string>().empty()) << site;
  EXPECT_EQ(site["stack"][0], site["function"]) << site;
}

json RecordOf(const std::string& path) {
  json record = json::parse(Slurp(path), nullptr, false);
  EXPECT_FALSE(record.is_discarded()) << path;
  return record;
}

// --kernel-exits with --sites on the PC machine's pc_exits guest (N CPUIDs,
// N reads of one MSR, N HLTs at known functions): the table's in-kernel
// rows, KVM's returns beside minivmm's count, the MSR's detail, and the
// folded stacks' "kvm:" lines for the exits KVM kept, all from one run.
TEST(SitesCliTest, InKernelExitsInTheTableRecordAndFoldedStacks) {
  REQUIRE_KVM();
  const Outcome o = Minivmm(
      "run --machine pc --kernel " MINIVMM_PC_GUEST_DIR "/pc_exits.elf --kernel-exits --stacks " +
      Path("kvm.folded") + " --json " + Path("kvm.json") + " --trace " + Path("kvm.jsonl"));
  std::error_code ec;
  if (std::filesystem::exists("/sys/module/kvm_pvm", ec)) {  // docs/hosts.md
    EXPECT_EQ(o.status, 125) << o.out;
    EXPECT_EQ(o.out.rfind("minivmm: --kernel-exits: kvm_pvm does not report", 0), 0u) << o.out;
    return;
  }
  if (::minivmm::testing::PcRefusedHere(o.out)) {
    EXPECT_EQ(o.status, 125) << o.out;
    return;
  }
  ASSERT_EQ(o.status, 1) << o.out;  // guest_done(): debug-exit 0
  const json record = RecordOf(Path("kvm.json"));
  const json& k = record["kernel_exits"];
  ASSERT_TRUE(k.is_object()) << record.dump(2);
  const uint64_t n = 64;  // tests/pc_guests/pc_exits.c
  EXPECT_NE(o.out.find("n=64\n"), std::string::npos) << o.out;
  // KVM's returns of KVM_RUN, as minivmm counted them.
  uint64_t returns = 0;
  for (const auto& [name, count] : k["returns"].items()) {
    returns += count.get<uint64_t>();
    EXPECT_EQ(count, record["exits"]["by_reason"][name]) << name;
  }
  EXPECT_EQ(returns, record["exits"]["total"].get<uint64_t>());
  EXPECT_NE(o.out.find("as minivmm counted"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("in-kernel exits by detail"), std::string::npos) << o.out;
  // The MSR's reads, detailed (the N and the one before them).
  const bool vmx = std::filesystem::exists("/sys/module/kvm_intel", ec);
  const std::string cpuid = vmx ? "CPUID" : "cpuid", msr = vmx ? "MSR_READ" : "msr";
  uint64_t apic_base_reads = 0;
  for (const json& d : k["by_detail"])
    if (d["reason"] == msr && d["detail"] == "rdmsr 0x1b") apic_base_reads = d["exits"];
  EXPECT_EQ(apic_base_reads, n + 1) << k["by_detail"].dump();
  // The sites: each loop's exits at its function; KVM kept them all but any
  // after which a kick returned KVM_RUN (an `intr` return).
  std::map<std::string, uint64_t> at, in_kernel;
  for (const json& site : k["sites"]) {
    if (site["frames"].empty() || !site["frames"][0].contains("function")) continue;
    const std::string key =
        site["reason"].get<std::string>() + " " + site["frames"][0]["function"].get<std::string>();
    at[key] += site["exits"].get<uint64_t>();
    in_kernel[key] += site["exits"].get<uint64_t>() - site["to_vmm"].get<uint64_t>();
  }
  EXPECT_EQ(at[cpuid + " cpuid_loop"], n) << k["sites"].dump();
  EXPECT_EQ(at[msr + " rdmsr_loop"], n) << k["sites"].dump();
  const uint64_t kicks = k["returns"].value("intr", uint64_t{0});
  EXPECT_GE(in_kernel[cpuid + " cpuid_loop"] + kicks, n);
  EXPECT_GE(in_kernel[msr + " rdmsr_loop"] + kicks, n);
  // Folded: the same, rooted at "kvm:<reason>"; every exit of the run once
  // (minivmm's own under their causes, KVM's under kvm:).
  std::istringstream folded(Slurp(Path("kvm.folded")));
  std::map<std::string, uint64_t> lines;
  uint64_t folded_exits = 0;
  for (std::string line; std::getline(folded, line);) {
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    lines[line.substr(0, space)] += std::stoull(line.substr(space + 1));
    folded_exits += std::stoull(line.substr(space + 1));
  }
  // With stacks (kvm_amd, docs/design.md "In-kernel exits"), each exit's
  // whole chain, the loop's caller below it; else the loop alone.
  const bool stacks = k["stacks"].get<bool>();
  EXPECT_EQ(stacks, !vmx) << record["result"]["notes"].dump();
  auto folded_at = [&](const std::string& reason, const std::string& loop) {
    const std::string leaf = stacks ? ";guest_main;" + loop : ";" + loop;
    uint64_t sum = 0;
    for (const auto& [stack, count] : lines) {
      if (stack.starts_with("kvm:" + reason + ";") && stack.ends_with(leaf)) sum += count;
    }
    return sum;
  };
  EXPECT_EQ(folded_at(cpuid, "cpuid_loop"), in_kernel[cpuid + " cpuid_loop"]);
  EXPECT_EQ(folded_at(msr, "rdmsr_loop"), in_kernel[msr + " rdmsr_loop"]);
  // The table gives each in-kernel site's chain on the line under it.
  const size_t section = o.out.find("in-kernel exit sites");
  const size_t loop = o.out.find("cpuid_loop", section);
  ASSERT_NE(loop, std::string::npos) << o.out;
  const size_t next = o.out.find('\n', loop) + 1;
  const std::string under = o.out.substr(next, o.out.find('\n', next) - next);
  EXPECT_EQ(under.find_first_not_of(' ') == under.find("<- guest_main"), stacks) << under;
  uint64_t to_vmm = 0;
  for (const auto& [name, count] : k["to_vmm_by_reason"].items()) to_vmm += count.get<uint64_t>();
  EXPECT_EQ(folded_exits, k["exits"].get<uint64_t>() - to_vmm + returns);
  // The trace: every exit KVM saw, one kernel_exit line each, with its
  // site; the exit lines are minivmm's as before.
  std::map<std::string, uint64_t> traced;
  uint64_t kernel_lines = 0, exit_lines = 0, traced_to_vmm = 0;
  json end;
  std::istringstream trace(Slurp(Path("kvm.jsonl")));
  for (std::string text; std::getline(trace, text);) {
    const json line = json::parse(text, nullptr, false);
    ASSERT_TRUE(line.is_object()) << text;
    if (line.contains("trace_end")) {
      end = line;
    } else if (line.value("kernel_exit", false)) {
      ++kernel_lines;
      traced_to_vmm += line["to_vmm"].get<bool>() ? 1 : 0;
      if (line.contains("site"))
        ++traced[line["reason"].get<std::string>() + " " +
                 line["site"]["function"].get<std::string>()];
    } else {
      ++exit_lines;
    }
  }
  EXPECT_EQ(kernel_lines, k["exits"].get<uint64_t>());
  EXPECT_EQ(traced_to_vmm, to_vmm);
  EXPECT_EQ(exit_lines, returns);
  EXPECT_EQ(traced[cpuid + " cpuid_loop"], n);
  EXPECT_EQ(traced[msr + " rdmsr_loop"], n);
  EXPECT_EQ(end.value("kernel_exits", uint64_t{0}), kernel_lines) << end;
  // Its perfetto form: one kvm marker each.
  const Outcome converted =
      Minivmm("trace " + Path("kvm.jsonl") + " -o " + Path("kvm.perfetto.json"));
  ASSERT_EQ(converted.status, 0) << converted.out;
  const json timeline = RecordOf(Path("kvm.perfetto.json"));
  uint64_t markers = 0;
  for (const json& event : timeline["traceEvents"]) markers += event.value("cat", "") == "kvm";
  EXPECT_EQ(markers, kernel_lines);
}

TEST(SitesCliTest, EveryExitOfTheJsonlTraceCarriesItsSite) {
  REQUIRE_KVM();
  const Outcome o = Minivmm("run -q --workload ctx,tls=same --pvops naive --sites --trace " +
                            Path("trace.jsonl") + " --json " + Path("traced.json"));
  ASSERT_EQ(o.status, 0) << o.out;
  const json record = RecordOf(Path("traced.json"));
  std::map<std::string, uint64_t> traced;
  bool load_tls = false;
  std::istringstream trace(Slurp(Path("trace.jsonl")));
  for (std::string text; std::getline(trace, text);) {
    const json line = json::parse(text);
    if (line.contains("trace_end")) continue;
    ASSERT_TRUE(line.contains("site")) << text;
    CountSites(line["site"], traced);
    for (const json& frame : line["site"]["stack"]) load_tls |= frame == "LoadTls";
    if (line["site"]["cause"] == "descriptor_update") {
      EXPECT_EQ(line["site"]["function"], "RawHypercall") << text;
      EXPECT_EQ(line["site"]["file"], "hypercall.h") << text;
      EXPECT_GT(line["site"]["line"].get<int>(), 0) << text;
    }
  }
  EXPECT_EQ(traced, RecordExitsByCause(record));
  EXPECT_TRUE(load_tls) << "tls=same updates descriptors from LoadTls";
}

TEST(SitesCliTest, EveryExitSliceOfThePerfettoTraceCarriesItsSite) {
  REQUIRE_KVM();
  const Outcome o = Minivmm("run -q --workload ctx --pvops naive --sites --trace-format perfetto " +
                            std::string("--trace ") + Path("trace.perfetto.json") + " --json " +
                            Path("perfetto.json"));
  ASSERT_EQ(o.status, 0) << o.out;
  const json record = RecordOf(Path("perfetto.json"));
  const json trace = json::parse(Slurp(Path("trace.perfetto.json")));
  std::map<std::string, uint64_t> traced;
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] != "X") continue;
    ASSERT_TRUE(event["args"].contains("site")) << event;
    CountSites(event["args"]["site"], traced);
  }
  EXPECT_EQ(traced, RecordExitsByCause(record));
}

TEST(SitesCliTest, WithoutSitesTheTraceHasNone) {
  REQUIRE_KVM();
  const Outcome o = Minivmm("run -q --workload ctx --trace " + Path("plain.jsonl"));
  ASSERT_EQ(o.status, 0) << o.out;
  std::istringstream trace(Slurp(Path("plain.jsonl")));
  uint64_t exits = 0;
  for (std::string text; std::getline(trace, text); ++exits)
    EXPECT_FALSE(json::parse(text).contains("site")) << text;
  EXPECT_GT(exits, 1u);
}

TEST(SitesCliTest, TheRecordsTimelineCountsEveryExitOfEachCause) {
  REQUIRE_KVM();
  const Outcome o = Minivmm("run -q --workload ctx,tls=same --pvops naive --sites --json " +
                            Path("timeline.json"));
  ASSERT_EQ(o.status, 0) << o.out;
  const json record = RecordOf(Path("timeline.json"));
  ASSERT_TRUE(record.contains("timeline"));
  const json& timeline = record["timeline"];
  EXPECT_EQ(timeline["source"], "host");
  EXPECT_GT(timeline["bin_ns"].get<int64_t>(), 0);
  const size_t bins = timeline["bins"].get<size_t>();
  EXPECT_LE(bins, 256u);
  std::map<std::string, uint64_t> counted;
  for (const auto& [cause, row] : timeline["exits_by_cause"].items()) {
    EXPECT_EQ(row.size(), bins) << cause;
    for (const json& n : row) counted[cause] += n.get<uint64_t>();
  }
  EXPECT_EQ(counted, RecordExitsByCause(record));
}

// A stripped guest (tests/tiny_guests/bad_frames.S, stripped): nothing
// names a frame, so the table, the record and the folded stacks give raw
// addresses, and still add up to the exits.
TEST(SitesCliTest, AStrippedGuestsSitesAreRawAddresses) {
  REQUIRE_KVM();
  const std::string kernel = std::string(MINIVMM_TINY_GUEST_DIR) + "/bad_frames_stripped.elf";
  const Outcome o = Minivmm("run --kernel " + kernel + " --sites --stacks " + Path("raw.txt") +
                            " --json " + Path("raw.json"));
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("<- 0x5551\n"), std::string::npos) << o.out;
  const json record = RecordOf(Path("raw.json"));
  uint64_t record_exits = 0;
  for (const json& stack : record["sites"]["stacks"]) {
    record_exits += stack["exits"].get<uint64_t>();
    for (const json& frame : stack["frames"]) {
      EXPECT_EQ(frame["function"], "") << frame;
      EXPECT_TRUE(frame["pc"].is_string()) << frame;
    }
  }
  EXPECT_EQ(record_exits, record["exits"]["total"].get<uint64_t>());
  std::istringstream folded(Slurp(Path("raw.txt")));
  uint64_t folded_exits = 0;
  std::string line;
  while (std::getline(folded, line)) {
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    folded_exits += std::stoull(line.substr(space + 1));
    // "cause;0x...;0x... count": every frame after the cause is an address.
    std::istringstream frames(line.substr(0, space));
    std::string frame;
    std::getline(frames, frame, ';');
    while (std::getline(frames, frame, ';')) EXPECT_EQ(frame.rfind("0x", 0), 0u) << line;
  }
  EXPECT_EQ(folded_exits, record_exits);
}

}  // namespace
}  // namespace sites_cli_test
