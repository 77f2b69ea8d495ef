// The `minivmm` command as a user meets it: exit statuses for every way a
// run can end and for bad input (README.md "Exit status").
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/report_value.h"
#include "gtest/gtest.h"
#include "minivmm_abi/boot.h"
#include "minivmm_abi/hypercall.h"
#include "nlohmann/json.hpp"
#include "tests/common/command.h"
#include "tests/common/pc_host.h"

namespace {

using ::minivmm::testing::Outcome;
using ::minivmm::testing::PcRefusedHere;
using ::minivmm::testing::Shell;
using nlohmann::json;

using ::minivmm::testing::Minivmm;

std::string TempFile(const std::string& name, const std::string& contents) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

std::string Tiny(const std::string& name) {
  return std::string(MINIVMM_TINY_GUEST_DIR) + "/" + name + ".elf";
}

std::string PcGuest(const std::string& name) {
  return std::string(MINIVMM_PC_GUEST_DIR) + "/" + name + ".elf";
}

// The PC machine refused by its host check (tests/common/pc_host.h): the
// line, and the status of a VMM error.
bool PcRefused(const Outcome& o) {
  if (!PcRefusedHere(o.out)) return false;
  EXPECT_EQ(o.status, 125) << o.out;
  return true;
}

// --machine pc (docs/machines.md): a Multiboot guest's console on stdout, its
// debug-exit status as the command's, and the record's machine and device
// counts: one uart exit per console byte, one debug-exit write.
TEST(CliPcTest, AMultibootGuestExitsWithItsStatusAndItsRecordNamesTheMachine) {
  REQUIRE_KVM();
  const std::string record_path = ::testing::TempDir() + "/pc.run.json";
  Outcome o = Minivmm("run -q --machine pc --kernel " + PcGuest("pc_entry") +
                      " --cmdline exit=4 --cpu-features -x2apic,-pcid --cpu-vendor GenuineIntel"
                      " --json " + record_path);
  if (PcRefused(o)) return;
  EXPECT_EQ(o.status, (4 << 1) | 1) << o.out;
  EXPECT_NE(o.out.find("magic=0x2badb002\n"), std::string::npos) << o.out;
  std::ifstream in(record_path);
  const json record = json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(record.is_discarded()) << o.out;
  EXPECT_EQ(record["config"]["machine"], "pc");
  EXPECT_EQ(record["config"]["cpu_features"], "-x2apic,-pcid");
  EXPECT_EQ(record["config"]["cpu_vendor"], "GenuineIntel");
  EXPECT_EQ(record["result"]["exit_code"], 9);
  const json& pio = record["exits"]["pio_by_device"];
  EXPECT_EQ(pio["debug-exit"], 1);
  EXPECT_EQ(pio["fw-cfg"], 0);
  EXPECT_EQ(pio["unclaimed"], 0);
  EXPECT_FALSE(pio.contains("hypercall")) << pio;
  // Everything on stdout with -q is the guest's: one uart exit per byte.
  EXPECT_EQ(pio["uart"], o.out.size()) << o.out;
}

// With -q and the guest's own shutdown, several vCPUs print nothing of
// minivmm's: a QEMU-style runner (kvm-unit-tests) reads any stderr line as
// a failure.
TEST(CliPcTest, QuietMeansOnlyTheGuestsOutputWithSeveralVcpus) {
  REQUIRE_KVM();
  Outcome o = Minivmm("run -q --machine pc --cpus 2 --kernel " + PcGuest("pc_smp"));
  if (PcRefused(o)) return;
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_EQ(o.out.find("minivmm:"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("cpus_up=2\n"), std::string::npos) << o.out;
}

// The exit table of a PC run: its devices and KVM's counters, none of the
// hypercall ABI's causes or hypercalls (the machine has no hypercall port).
TEST(CliPcTest, TheExitTableHasThePcDevicesAndNoHypercallSections) {
  REQUIRE_KVM();
  Outcome o = Minivmm("run --machine pc --cpus 2 --kernel " + PcGuest("pc_fwcfg"));
  if (PcRefused(o)) return;
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("pio fw-cfg                              -           38  vmm"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("host counters"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("exits by cause"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("  hypercalls "), std::string::npos) << o.out;
}

// scripts/minivmm-qemu with the argv kvm-unit-tests' x86/run passes, on a
// real PC machine: the guest's output and its debug-exit status come back as
// from QEMU, and nothing else is printed.
TEST(CliPcTest, TheQemuFrontRunsAGuestWithKvmUnitTestsArgv) {
  REQUIRE_KVM();
  const std::string env = TempFile("pc_front.env", "KEY=1\n");
  Outcome o = Shell("MINIVMM=" + std::string(MINIVMM_BIN) + " " MINIVMM_SOURCE_DIR
                    "/scripts/minivmm-qemu -nodefaults -device pc-testdev -device "
                    "isa-debug-exit,iobase=0xf4,iosize=0x4 -vnc none -serial stdio -device "
                    "pci-testdev -machine accel=kvm -kernel " +
                    PcGuest("pc_smp") + " -smp 2 -append 'x y' -initrd " + env + " -cpu max");
  if (PcRefused(o)) return;
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("cpus_up=2\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("done\n"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("minivmm"), std::string::npos) << o.out;
}

// --cpu-features and --cpu-vendor (include/minivmm/cpu_features.h): a bad
// list or vendor is a usage error, `info --cpu-features` lists every name
// (no KVM needed), and with --cpu-enforce a bit the machine cannot have is
// refused before any vCPU runs.
TEST(CliTest, CpuFeaturesAreCheckedBeforeTheGuestRuns) {
  Outcome sign = Minivmm("run --cpu-features x2apic");
  EXPECT_EQ(sign.status, 2) << sign.out;
  EXPECT_NE(sign.out.find("cpu feature 'x2apic': write +NAME"), std::string::npos) << sign.out;
  Outcome unknown = Minivmm("run --cpu-features +avx9");
  EXPECT_EQ(unknown.status, 2) << unknown.out;
  EXPECT_NE(unknown.out.find("cpu feature 'avx9' is not one minivmm knows (vmx, pcid,"),
            std::string::npos)
      << unknown.out;
  Outcome vendor = Minivmm("run --cpu-vendor Intel");
  EXPECT_EQ(vendor.status, 2) << vendor.out;
  EXPECT_NE(vendor.out.find("exactly 12 printable ASCII characters"), std::string::npos)
      << vendor.out;
  Outcome list = Minivmm("info --cpu-features");
  EXPECT_EQ(list.status, 0) << list.out;
  EXPECT_NE(list.out.find("\nx2apic         CPUID.0x1.0:ecx[21]        x2APIC mode"),
            std::string::npos)
      << list.out;
  EXPECT_EQ(std::count(list.out.begin(), list.out.end(), '\n'), 13) << list.out;
  REQUIRE_KVM();
  Outcome apic = Minivmm("run --cpu-enforce --cpu-features +x2apic");
  EXPECT_EQ(apic.status, 125) << apic.out;
  EXPECT_NE(apic.out.find("minivmm: cpu feature +x2apic: this machine has no local APIC (the pc "
                          "machine has one)\n"),
            std::string::npos)
      << apic.out;
}

// --kernel-exits where this process may not trace: root without any
// capability (setpriv empties the bounding set) can neither mount tracefs
// nor open a tracepoint's raw records. One line, one of the documented
// forms (which one depends on whether an earlier run here mounted tracefs),
// and the status of a VMM error, before any VM exists. On kvm_pvm its own
// refusal comes first (docs/hosts.md).
TEST(CliTest, KernelExitsAreRefusedWithOneLineWithoutTheRightToTrace) {
  REQUIRE_KVM();
  Outcome o = Shell("setpriv --bounding-set=-all --inh-caps=-all " MINIVMM_BIN
                    " run --kernel-exits");
  EXPECT_EQ(o.status, 125) << o.out;
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
  std::error_code ec;
  std::vector<std::string> forms = {
      "minivmm: --kernel-exits: tracefs is not mounted and this process could not mount it",
      "minivmm: --kernel-exits: cannot read KVM's tracepoint formats under ",
      "minivmm: --kernel-exits: no right to trace kvm:kvm_exit (perf_event_open: "};
  if (std::filesystem::exists("/sys/module/kvm_pvm", ec))
    forms = {"minivmm: --kernel-exits: kvm_pvm does not report"};
  EXPECT_TRUE(std::any_of(forms.begin(), forms.end(), [&o](const std::string& f) {
    return o.out.rfind(f, 0) == 0;
  })) << o.out;
}

// Each machine refuses what belongs to the other, before any vCPU runs.
TEST(CliPcTest, EachMachineRefusesTheOthersFlags) {
  const std::string pc_entry = " --kernel " + PcGuest("pc_entry");
  struct Refusal {
    std::string args;
    int status;
    std::string says;  // "" where only the status is checked
  };
  const Refusal refusals[] = {
      {"run --machine pc" + pc_entry + " --workload ctx", 2, "--workload is the built-in guest's"},
      {"run --machine microvm", 2, ""},
      {"run --pit", 125, "a PIT is for the pc machine"},
      {"run --hyperv", 125, "Hyper-V's enlightenments is for the pc machine"},
      {"run --hyperv-testdev", 125, "hyperv-testdev is for the pc machine"},
      // On the PC machine it needs SynIC, before any vCPU runs.
      {"run --machine pc --hyperv-testdev" + pc_entry, 125,
       "hyperv-testdev needs Hyper-V's enlightenments"},
      // The q35 machine's PCI devices on the others, and what q35 has not.
      {"run --intel-iommu", 125,
       "an Intel IOMMU is for the q35 machine; the builtin machine has none"},
      {"run --machine pc --edu" + pc_entry, 125,
       "the edu device is for the q35 machine (--machine q35); the pc machine has no PCI"},
      {"run --machine q35 --split-irqchip --pit" + pc_entry, 125,
       "a PIT is not on the q35 machine with the split irqchip"},
      {"run --machine q35 --intel-iommu" + pc_entry, 125, "an Intel IOMMU needs the split irqchip"},
      {"run --machine pc --split-irqchip" + pc_entry, 125,
       "the split irqchip is for the q35 machine"},
      {"run --machine q35", 125, "the q35 machine needs a kernel"},
      {"run --machine pc --timer-hz 100" + pc_entry, 125, "is the builtin machine's"},
  };
  for (const Refusal& r : refusals) {
    const Outcome o = Minivmm(r.args);
    EXPECT_EQ(o.status, r.status) << r.args << "\n" << o.out;
    if (!r.says.empty())
      EXPECT_NE(o.out.find(r.says), std::string::npos) << r.args << "\n" << o.out;
  }
  // The image is read once the VM exists.
  REQUIRE_KVM();
  Outcome bad = Minivmm("run --machine pc --kernel " + Tiny("spin"));
  if (PcRefused(bad)) return;
  EXPECT_EQ(bad.status, 125) << bad.out;
  EXPECT_NE(bad.out.find("Multiboot"), std::string::npos) << bad.out;
}

// Run schema version 2 (docs/run-record.md): integers become JSON numbers,
// losslessly; everything else stays the guest's text.
TEST(ReportValueTest, DecimalIntegersBecomeNumbersAndNothingElse) {
  using ::minivmm::cli::ReportNumber;
  using ::minivmm::cli::ReportText;
  using ::minivmm::cli::ReportValueJson;
  EXPECT_EQ(ReportValueJson("64"), json(64));
  EXPECT_TRUE(ReportValueJson("64").is_number_unsigned());
  EXPECT_EQ(ReportValueJson("0"), json(0));
  EXPECT_EQ(ReportValueJson("-3"), json(-3));
  EXPECT_EQ(ReportValueJson("18446744073709551615"), json(UINT64_MAX));
  EXPECT_EQ(ReportValueJson("-9223372036854775808"), json(INT64_MIN));
  for (const char* text : {"", "-", "pv", "on", "007", "-0", "+1", "1.5", "1e3", " 1", "1 ",
                           "18446744073709551616", "-9223372036854775809", "0x10"}) {
    EXPECT_EQ(ReportValueJson(text), json(text)) << text;
  }
  EXPECT_EQ(ReportNumber(json(60)), 60.0);
  EXPECT_EQ(ReportNumber(json("60")), 60.0);  // version 1
  EXPECT_EQ(ReportNumber(json("pv")), std::nullopt);
  EXPECT_EQ(ReportText(json(-3)), "-3");
  EXPECT_EQ(ReportText(json("naive")), "naive");
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
  EXPECT_NE(text.find("\"schema_version\": 2"), std::string::npos);
  EXPECT_NE(text.find("\"sha256:"), std::string::npos);
}

TEST(CliTest, TraceHasOneLinePerExit) {
  REQUIRE_KVM();
  std::string path = ::testing::TempDir() + "/trace.jsonl";
  ASSERT_EQ(Minivmm("run -q --kernel " + Tiny("null_hypercalls") + " --trace " + path).status, 0);
  std::ifstream in(path);
  int lines = 0, console = 0;
  std::string last;
  for (std::string line; std::getline(in, line); ++lines) {
    if (line.find("\"hypercall\":\"console_io\"") != std::string::npos) ++console;
    last = line;
  }
  EXPECT_EQ(lines, 1002);  // 1001 exits and the trace's end (docs/trace.md)
  EXPECT_EQ(console, 1000);
  const json end = json::parse(last, nullptr, /*allow_exceptions=*/false);
  EXPECT_EQ(end["trace_end"], true) << last;
  EXPECT_EQ(end["exits"], 1001) << last;
}

// A refused hypercall's reason reaches the trace; a successful one has none.
TEST(CliTraceTest, RefusedHypercallsCarryTheirReason) {
  REQUIRE_KVM();
  std::string path = ::testing::TempDir() + "/hostile.jsonl";
  ASSERT_EQ(Minivmm("run -q --workload hostile --trace " + path).status, 0);
  std::ifstream in(path);
  int refused = 0;
  for (std::string text; std::getline(in, text);) {
    const json line = json::parse(text, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(line.is_object()) << text;
    if (!line.contains("hypercall")) continue;
    if (line["result"].get<int64_t>() < 0) {
      ++refused;
      ASSERT_TRUE(line.contains("refusal")) << text;
      EXPECT_FALSE(line["refusal"].get<std::string>().empty()) << text;
    } else {
      EXPECT_FALSE(line.contains("refusal")) << text;
    }
  }
  EXPECT_GT(refused, 100);  // the hostile workload makes ~200 refused calls
}

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// A guest panic (shutdown code 4) prints the stopping vCPU's registers and
// each vCPU's last exits (--recent-exits N, docs/design.md "Recent exits");
// the record keeps the same exits, each with the line printed for it.
TEST(CliTest, GuestPanicPrintsRegistersAndEachVcpusLastExits) {
  REQUIRE_KVM();
  const std::string record_path = ::testing::TempDir() + "/panic.json";
  const Outcome o = Minivmm("run --cpus 2 --workload fault,kind=gdt --recent-exits 3 --json " +
                            record_path);
  ASSERT_EQ(o.status, MVMM_SHUTDOWN_ASSERT) << o.out;
  EXPECT_NE(o.out.find("vCPU 0 registers:"), std::string::npos) << o.out;
  const json record = ReadJson(record_path);
  const json& recent = record["result"]["recent_exits"];
  ASSERT_TRUE(recent.is_array() && recent.size() == 2) << recent;
  for (size_t v = 0; v < 2; ++v) {
    const uint64_t total = record["exits"]["per_vcpu"][v]["total"].get<uint64_t>();
    ASSERT_EQ(recent[v].size(), std::min<uint64_t>(3, total)) << recent[v];
    EXPECT_NE(o.out.find("vCPU " + std::to_string(v) + ": its last " +
                         std::to_string(recent[v].size()) + " of " + std::to_string(total) +
                         " exits, oldest first:"),
              std::string::npos)
        << o.out;
    for (const json& e : recent[v]) {
      EXPECT_NE(o.out.find("  " + e["text"].get<std::string>() + "\n"), std::string::npos)
          << e << o.out;
    }
    EXPECT_EQ(recent[v].back()["sequence"].get<uint64_t>() + 1, total);
  }
  const json& last = recent[0].back();
  EXPECT_EQ(last["reason"], "io");
  EXPECT_EQ(last["hypercall"], true);
  EXPECT_EQ(last["rax"].get<uint64_t>(), MVMM_HC_sched_op);
  EXPECT_EQ(last["rsi"].get<uint64_t>(), static_cast<uint64_t>(MVMM_SHUTDOWN_ASSERT));
  EXPECT_NE(last["text"].get<std::string>().find(" hypercall sched_op rdi=0x2 rsi=0x4 rip="),
            std::string::npos)
      << last;
}

TEST(CliTest, NoRecentExitsAreKeptOrPrintedWithRecentExits0) {
  REQUIRE_KVM();
  const Outcome o = Minivmm("run --workload fault,kind=gdt --recent-exits 0");
  ASSERT_EQ(o.status, MVMM_SHUTDOWN_ASSERT) << o.out;
  EXPECT_NE(o.out.find("vCPU 0 registers:"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("its last"), std::string::npos) << o.out;
}

TEST(CliTest, RecentExitsOverTheLimitIsUsageError) {
  EXPECT_EQ(Minivmm("run --recent-exits 4097").status, 2);
  EXPECT_EQ(Minivmm("run --recent-exits -1").status, 2);
}

// --wasted: the trace's marks add up to the record's totals, per hypercall,
// and the exit table gets its column. Both come from the same run, through
// two paths (the observer's event and the per-vCPU counters).
TEST(CliTraceTest, WastedMarksAddUpToTheRecordsCounts) {
  REQUIRE_KVM();
  const std::string trace = ::testing::TempDir() + "/wasted.jsonl";
  const std::string record_path = ::testing::TempDir() + "/wasted.json";
  const Outcome run = Minivmm("run --workload ctx,tls=same --pvops naive --wasted --json " +
                              record_path + " --trace " + trace);
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("wasted ops/exits"), std::string::npos) << run.out;
  const json record = ReadJson(record_path);
  ASSERT_TRUE(record["wasted"].is_object());
  std::map<std::string, uint64_t> marked;  // hypercall -> exits marked wasted
  uint64_t pairs_closed = 0;
  std::ifstream in(trace);
  for (std::string text; std::getline(in, text);) {
    const json line = json::parse(text, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(line.is_object()) << text;
    if (line.contains("cancels")) ++pairs_closed;
    if (line.contains("wasted")) ++marked[line["hypercall"].get<std::string>()];
  }
  // A pair's first exit is counted when its second arrives, and is marked
  // only through the second's "cancels": add those back per hypercall.
  uint64_t marked_total = 0, counted_total = 0;
  for (const auto& [name, n] : marked) marked_total += n;
  for (const auto& [name, c] : record["wasted"]["by_hypercall"].items())
    counted_total += c["exits"].get<uint64_t>();
  EXPECT_EQ(marked_total + pairs_closed, counted_total);
  EXPECT_GT(marked["update_descriptor"], 0u);
  EXPECT_EQ(marked["update_descriptor"],
            record["wasted"]["by_hypercall"]["update_descriptor"]["exits"].get<uint64_t>());
}

// What every Trace Event Format file minivmm writes must satisfy: an object
// with a traceEvents array; every event has ph, ts, pid and tid; slices
// have dur >= 0; per track (tid) timestamps never go back and slices do not
// overlap. Returns the number of exit slices ("X").
size_t CheckTimeline(const json& trace) {
  EXPECT_TRUE(trace.is_object());
  if (!trace.is_object() || !trace.contains("traceEvents")) {
    ADD_FAILURE() << "no traceEvents";
    return 0;
  }
  EXPECT_EQ(trace.value("displayTimeUnit", ""), "ns");
  const json& events = trace["traceEvents"];
  EXPECT_TRUE(events.is_array());
  std::map<int64_t, double> last_ts, slice_end;
  size_t slices = 0;
  for (const json& e : events) {
    if (!(e.contains("ph") && e["ph"].is_string() && e.contains("ts") && e["ts"].is_number() &&
          e.contains("pid") && e["pid"].is_number_integer() && e.contains("tid") &&
          e["tid"].is_number_integer() && e.contains("name") && e["name"].is_string())) {
      ADD_FAILURE() << "an event without ph, ts, pid, tid or name: " << e.dump();
      continue;
    }
    const std::string ph = e["ph"];
    if (ph == "M") continue;
    const int64_t tid = e["tid"];
    const double ts = e["ts"];
    EXPECT_GE(ts, 0) << e.dump();
    if (last_ts.count(tid)) {
      EXPECT_GE(ts, last_ts[tid]) << "time goes back: " << e.dump();
    }
    last_ts[tid] = ts;
    if (ph != "X") continue;
    ++slices;
    EXPECT_TRUE(e.contains("dur") && e["dur"].is_number()) << e.dump();
    const double dur = e.value("dur", -1.0);
    EXPECT_GE(dur, 0) << e.dump();
    // 1 ns of slack for the microsecond doubles' rounding.
    if (slice_end.count(tid)) {
      EXPECT_GE(ts + 1e-3, slice_end[tid]) << "overlap: " << e.dump();
    }
    slice_end[tid] = ts + dur;
  }
  return slices;
}

const json* FindEvent(const json& trace, const std::string& ph, const std::string& name) {
  for (const json& e : trace["traceEvents"])
    if (e.value("ph", "") == ph && e.value("name", "") == name) return &e;
  return nullptr;
}

TEST(CliTraceTest, PerfettoTimelineHasOneSlicePerExitAndTheGuestsReports) {
  REQUIRE_KVM();
  std::string trace_path = ::testing::TempDir() + "/ctx.perfetto.json";
  std::string record_path = ::testing::TempDir() + "/ctx.run.json";
  Outcome o = Minivmm("run -q --workload ctx,tasks=2,rounds=3 --trace-format perfetto --trace " +
                      trace_path + " --json " + record_path);
  ASSERT_EQ(o.status, 0) << o.out;
  json trace = ReadJson(trace_path);
  ASSERT_FALSE(trace.is_discarded()) << "not JSON: " << trace_path;
  json record = ReadJson(record_path);
  ASSERT_FALSE(record.is_discarded());
  EXPECT_EQ(CheckTimeline(trace), record["exits"]["total"].get<size_t>());

  const json* process = FindEvent(trace, "M", "process_name");
  ASSERT_NE(process, nullptr);
  EXPECT_EQ((*process)["args"]["name"], "minivmm: ctx,tasks=2,rounds=3");
  const json* thread = FindEvent(trace, "M", "thread_name");
  ASSERT_NE(thread, nullptr);
  EXPECT_EQ((*thread)["args"]["name"], "vCPU 0");
  EXPECT_EQ((*thread)["tid"], 0);

  // A hypercall slice names the hypercall and carries the jsonl fields.
  const json* report = FindEvent(trace, "X", "report");
  ASSERT_NE(report, nullptr);
  EXPECT_EQ((*report)["args"]["reason"], "io");
  EXPECT_TRUE((*report)["args"].contains("args"));
  EXPECT_TRUE((*report)["args"].contains("result"));
  // The guest's records as markers: configuration, the workload, shutdown.
  const json* config = FindEvent(trace, "i", "report config");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ((*config)["args"]["config.workload"], "ctx");
  const json* ctx = FindEvent(trace, "i", "report ctx");
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ((*ctx)["args"]["ctx.passes"], 6);
  EXPECT_NE(FindEvent(trace, "i", "report kernel"), nullptr);
  EXPECT_NE(FindEvent(trace, "i", "stop: guest shutdown"), nullptr);
}

// --cpus (README.md "Usage"): outside 1-32 a usage error naming the flag.
TEST(CliSmpTest, CpuCountOutsideOneTo32IsUsageError) {
  for (const char* cpus : {"0", "33", "1000", "-1", "two"}) {
    SCOPED_TRACE(cpus);
    Outcome o = Minivmm(std::string("run --cpus ") + cpus);
    EXPECT_EQ(o.status, 2) << o.out;
    EXPECT_NE(o.out.find("--cpus"), std::string::npos) << o.out;
  }
}

// The exit table's row `what` of the per-vCPU section: its numbers.
std::vector<uint64_t> TableRow(const std::string& out, const std::string& what) {
  std::vector<uint64_t> numbers;
  const size_t section = out.find("exits per vCPU");
  if (section == std::string::npos) return numbers;
  const size_t at = out.find("\n  " + what + " ", section);
  if (at == std::string::npos) return numbers;
  const size_t from = at + 3 + what.size();
  std::istringstream line(out.substr(from, out.find('\n', from) - from));
  for (uint64_t n; line >> n;) numbers.push_back(n);
  return numbers;
}

// Per-vCPU timers (tiny guest vcpu_timers): each secondary vCPU's timer
// injections, in the record and in the exit table's per-vCPU rows, equal
// what its own handler counted.
TEST(CliTest, TimerInjectionsPerVcpuInTheRecordAndTheTable) {
  REQUIRE_KVM();
  std::string record_path = ::testing::TempDir() + "/vcpu_timers.run.json";
  Outcome o = Minivmm("run --cpus 3 --kernel " + Tiny("vcpu_timers") + " --json " + record_path);
  ASSERT_EQ(o.status, 0) << o.out;
  json record = ReadJson(record_path);
  ASSERT_FALSE(record.is_discarded());
  const json& per_vcpu = record["exits"]["per_vcpu"];
  ASSERT_EQ(per_vcpu.size(), 3u);
  const json& reports = record["guest"]["reports"];
  std::vector<uint64_t> row;
  uint64_t total = 0;
  for (uint32_t cpu = 0; cpu < 3; ++cpu) {
    const uint64_t n = per_vcpu[cpu]["timer_injections"].get<uint64_t>();
    if (cpu == 0) {
      EXPECT_EQ(n, 0u);
    } else {
      EXPECT_EQ(n, reports["vt.cpu" + std::to_string(cpu) + ".ticks"].get<uint64_t>());
    }
    row.push_back(n);
    total += n;
  }
  row.push_back(total);
  EXPECT_EQ(record["causes"]["timer_injections"], total);
  EXPECT_EQ(TableRow(o.out, "timer_injections"), row) << o.out;
}

// Every vCPU in the record, the exit table and the timeline; the stop line
// names the vCPU that stopped the run and the idle ones.
TEST(CliSmpTest, FourCpusAreEachInTheRecordTableAndTimeline) {
  REQUIRE_KVM();
  std::string trace_path = ::testing::TempDir() + "/smp.perfetto.json";
  std::string record_path = ::testing::TempDir() + "/smp.run.json";
  Outcome o = Minivmm("run --cpus 4 --workload hello,lines=1 --trace-format perfetto --trace " +
                      trace_path + " --json " + record_path);
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("4 vCPUs: vCPU 0 stopped the run (guest shutdown); idle: vCPU 1, 2, 3"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("  vCPU 3 "), std::string::npos) << o.out;
  // The per-vCPU table: a column per vCPU and the total.
  EXPECT_NE(o.out.find("exits per vCPU"), std::string::npos) << o.out;
  EXPECT_EQ(TableRow(o.out, "cause if_set"), (std::vector<uint64_t>{1, 1, 1, 1, 4})) << o.out;
  json record = ReadJson(record_path);
  ASSERT_FALSE(record.is_discarded());
  EXPECT_EQ(record["config"]["cpus"], 4);
  EXPECT_EQ(record["result"]["stopped_by_vcpu"], 0);
  const json& per_vcpu = record["exits"]["per_vcpu"];
  ASSERT_EQ(per_vcpu.size(), 4u);
  uint64_t total = 0;
  for (const json& v : per_vcpu) total += v["total"].get<uint64_t>();
  EXPECT_EQ(total, record["exits"]["total"].get<uint64_t>());
  for (int cpu = 1; cpu < 4; ++cpu) {
    SCOPED_TRACE(cpu);
    const std::string prefix = "smp.cpu" + std::to_string(cpu) + ".";
    const json& reports = record["guest"]["reports"];
    EXPECT_EQ(per_vcpu[cpu]["total"], reports[prefix + "bringup_hypercalls"].get<uint64_t>() +
                                          reports[prefix + "idle_blocks"].get<uint64_t>());
    EXPECT_EQ(per_vcpu[cpu]["hypercall_exits"],
              json({{"vcpu_op", 1}, {"set_if", 1}, {"sched_op", 1}}));
    // One IF set (bring-up's set_if); every other cause zero.
    for (const auto& [cause, c] : per_vcpu[cpu]["causes"].items()) {
      SCOPED_TRACE(cause);
      const uint64_t want = cause == "if_set" ? 1 : 0;
      EXPECT_EQ(c["ops"], want);
      EXPECT_EQ(c["exits"], want);
    }
    EXPECT_EQ(per_vcpu[cpu]["ipi_injections"], 0);
    const json& stop = record["result"]["vcpus"][cpu];
    EXPECT_EQ(stop["stop_reason"], "guest shutdown");
    EXPECT_EQ(stop["with_vm"], true);
    EXPECT_EQ(stop["idle"], true);
  }
  EXPECT_EQ(record["guest"]["reports"]["kernel.cpus_up"], 4);

  json trace = ReadJson(trace_path);
  ASSERT_FALSE(trace.is_discarded());
  EXPECT_EQ(CheckTimeline(trace), record["exits"]["total"].get<size_t>());
  std::set<int64_t> tracks;
  for (const json& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") tracks.insert(e["tid"].get<int64_t>());
  EXPECT_EQ(tracks, (std::set<int64_t>{0, 1, 2, 3}));
}

uint64_t Count(const json& group, const std::string& name, const char* field) {
  return group.contains(name) ? group[name].value(field, uint64_t{0}) : 0;
}

// Per-vCPU counts everywhere (docs/run-record.md): each vCPU's causes,
// hypercalls and wasted exits add up to the run's; vCPU 0's are a one-CPU
// run's and the guest's own; every other vCPU's are its bring-up and idle
// hypercalls as the guest counted them; the exit table has them as columns.
TEST(CliSmpTest, PerVcpuCausesHypercallsAndWastedAddUpAndMatchTheGuest) {
  REQUIRE_KVM();
  const std::string one_path = ::testing::TempDir() + "/per_vcpu_1.json";
  const std::string smp_path = ::testing::TempDir() + "/per_vcpu_3.json";
  const std::string args = " --workload irq,loops=4 --pvops naive --wasted --json ";
  ASSERT_EQ(Minivmm("run -q" + args + one_path).status, 0);
  Outcome o = Minivmm("run --cpus 3" + args + smp_path);
  ASSERT_EQ(o.status, 0) << o.out;
  const json one = ReadJson(one_path), smp = ReadJson(smp_path);
  ASSERT_FALSE(one.is_discarded() || smp.is_discarded());
  const json& per_vcpu = smp["exits"]["per_vcpu"];
  ASSERT_EQ(per_vcpu.size(), 3u);

  for (const auto& [name, c] : smp["causes"]["causes"].items()) {
    for (const char* field : {"ops", "exits"}) {
      uint64_t sum = 0;
      for (const json& v : per_vcpu) sum += Count(v["causes"], name, field);
      EXPECT_EQ(sum, c[field].get<uint64_t>()) << name << " " << field;
    }
  }
  for (const auto& [name, c] : smp["hypercalls"]["calls"].items()) {
    for (const char* field : {"ops", "exits", "errors"}) {
      uint64_t sum = 0;
      for (const json& v : per_vcpu) sum += Count(v["hypercalls"], name, field);
      EXPECT_EQ(sum, c[field].get<uint64_t>()) << name << " " << field;
    }
  }
  for (const auto& [name, c] : smp["wasted"]["by_cause"].items()) {
    uint64_t sum = 0;
    for (const json& v : per_vcpu) sum += Count(v["wasted"]["by_cause"], name, "exits");
    EXPECT_EQ(sum, c["exits"].get<uint64_t>()) << name;
  }

  const json& cpu0 = per_vcpu[0];
  const json& single = one["exits"]["per_vcpu"][0];
  for (const char* key : {"total", "by_reason", "hypercalls", "causes", "wasted"})
    EXPECT_EQ(cpu0[key], single[key]) << key;
  const json& reports = smp["guest"]["reports"];
  for (const auto& [name, c] : cpu0["hypercalls"].items())
    EXPECT_EQ(c["exits"], reports.value("kernel.hc_exits." + name, json(0))) << name;
  for (int cpu = 1; cpu < 3; ++cpu) {
    SCOPED_TRACE(cpu);
    const json& v = per_vcpu[cpu];
    const std::string prefix = "smp.cpu" + std::to_string(cpu) + ".";
    // Bring-up: vcpu_op (run-state area) and set_if(1); then one block.
    EXPECT_EQ(
        Count(v["hypercalls"], "vcpu_op", "exits") + Count(v["hypercalls"], "set_if", "exits"),
        reports[prefix + "bringup_hypercalls"].get<uint64_t>());
    EXPECT_EQ(Count(v["hypercalls"], "sched_op", "exits"),
              reports[prefix + "idle_blocks"].get<uint64_t>());
    EXPECT_EQ(v["total"], 3);
    for (const auto& [name, c] : v["causes"].items())
      EXPECT_EQ(c["exits"], name == "if_set" ? 1 : 0) << name;
  }

  // The exit table: a column per vCPU, then the total.
  EXPECT_NE(o.out.find("exits per vCPU"), std::string::npos) << o.out;
  const uint64_t sched0 = Count(cpu0["hypercalls"], "sched_op", "exits");
  EXPECT_EQ(TableRow(o.out, "hypercall sched_op"),
            (std::vector<uint64_t>{sched0, 1, 1, sched0 + 2}))
      << o.out;
  const uint64_t if_clear = Count(cpu0["causes"], "if_clear", "exits");
  ASSERT_GT(if_clear, 0u);
  EXPECT_EQ(TableRow(o.out, "cause if_clear"), (std::vector<uint64_t>{if_clear, 0, 0, if_clear}))
      << o.out;
  EXPECT_EQ(TableRow(o.out, "total"),
            (std::vector<uint64_t>{cpu0["total"].get<uint64_t>(), 3, 3,
                                   smp["exits"]["total"].get<uint64_t>()}))
      << o.out;
}

TEST(CliSmpTest, TripleFaultOnASecondaryCpuIs123AndNamesIt) {
  REQUIRE_KVM();
  Outcome o = Minivmm("run --cpus 3 --cmdline f --kernel " + Tiny("smp"));
  EXPECT_EQ(o.status, 123) << o.out;
  EXPECT_NE(o.out.find("3 vCPUs: vCPU 2 stopped the run (triple fault); idle: vCPU 1"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("vCPU 2 registers"), std::string::npos) << o.out;
}

TEST(CliSmpTest, TimeoutIs124AndTheHostStoppedTheRun) {
  REQUIRE_KVM();
  Outcome o = Minivmm("run --cpus 2 --timeout 1 --cmdline w --kernel " + Tiny("smp"));
  EXPECT_EQ(o.status, 124) << o.out;
  EXPECT_NE(o.out.find("2 vCPUs: the host stopped the run (timeout)"), std::string::npos) << o.out;
}

TEST(CliTraceTest, BadTraceFormatIsUsageError) {
  EXPECT_EQ(Minivmm("run --trace-format xml --trace " + ::testing::TempDir() + "/x.json").status,
            2);
}

TEST(CliTraceTest, PerfettoTimelineIsClosedWhenTheRunTimesOut) {
  REQUIRE_KVM();
  std::string path = ::testing::TempDir() + "/spin.perfetto.json";
  Outcome o = Minivmm("run -q --timeout 0.3 --kernel " + Tiny("spin") +
                      " --trace-format perfetto --trace " + path);
  EXPECT_EQ(o.status, 124) << o.out;
  json trace = ReadJson(path);
  ASSERT_FALSE(trace.is_discarded()) << "not JSON: " << path;
  CheckTimeline(trace);
  EXPECT_NE(FindEvent(trace, "i", "stop: timeout"), nullptr);
}

TEST(CliTraceTest, TraceCommandConvertsAJsonlTrace) {
  REQUIRE_KVM();
  std::string jsonl = ::testing::TempDir() + "/hello.jsonl";
  std::string out = ::testing::TempDir() + "/hello.perfetto.json";
  ASSERT_EQ(Minivmm("run -q --workload hello,lines=2 --trace " + jsonl).status, 0);
  size_t lines = 0;
  std::ifstream in(jsonl);
  for (std::string line; std::getline(in, line);) ++lines;
  Outcome o = Minivmm("trace " + jsonl + " -o " + out);
  ASSERT_EQ(o.status, 0) << o.out;
  json trace = ReadJson(out);
  ASSERT_FALSE(trace.is_discarded());
  EXPECT_EQ(CheckTimeline(trace), lines - 1);  // the last line is the trace's end
  EXPECT_NE(FindEvent(trace, "i", "report hello"), nullptr);
  EXPECT_NE(FindEvent(trace, "i", "stop: guest shutdown"), nullptr);
  EXPECT_EQ(Minivmm("trace " + TempFile("not_a_trace.jsonl", "{\"x\": 1}\n") + " -o " + out).status,
            2);
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
// With `trace`, it also writes a perfetto trace there.
// Whether process `pid` holds a KVM vCPU file descriptor.
// Whether process `pid` holds a file descriptor whose target contains `what`
// ("kvm-vcpu": a vCPU; "kvm-vm": a VM).
bool HasKvmFd(pid_t pid, const char* what) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code link_ec;
    std::string target = std::filesystem::read_symlink(entry.path(), link_ec).string();
    if (target.find(what) != std::string::npos) return true;
  }
  return false;
}
bool HasVcpuFd(pid_t pid) { return HasKvmFd(pid, "kvm-vcpu"); }

Outcome StopWithSignal(int signo, const std::string& trace = "") {
  // Per process and signal: ctest runs these tests in parallel processes.
  std::string out_path = ::testing::TempDir() + "/signal_" + std::to_string(getpid()) + "_" +
                         std::to_string(signo) + ".out";
  std::string kernel = std::string(MINIVMM_TINY_GUEST_DIR) + "/spin.elf";
  std::vector<const char*> argv = {MINIVMM_BIN, "run",      "--timeout",
                                   "60",        "--kernel", kernel.c_str()};
  if (!trace.empty()) {
    for (const char* a : {"--trace-format", "perfetto", "--trace"}) argv.push_back(a);
    argv.push_back(trace.c_str());
  }
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = freopen(out_path.c_str(), "w", stderr);
    (void)f;
    execv(MINIVMM_BIN, const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  // Signal it only once its vCPU exists (minivmm installs its handlers before
  // any set-up): a fixed delay is too short where start-up is slow (a
  // sanitizer build on a nested KVM), and an early signal would just kill it.
  for (int i = 0; i < 600 && !HasVcpuFd(pid); ++i) usleep(50 * 1000);
  usleep(100 * 1000);
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

// A signal while the VM is being made (its VM fd open, no vCPU yet) waits
// until the VM exists and then stops it: status 130, never a VMM error
// (125) from a system call it interrupted (KVM_CREATE_VM's EINTR, seen on
// the nested kvm_amd; kvm_pvm does not interrupt it). Each
// attempt signals as soon as the VM fd appears; at least one must find no
// vCPU then, or the window was never hit and the test says so.
TEST(CliSignalTest, SigintWhileTheVmIsBeingMadeIs130NotAVmmError) {
  REQUIRE_KVM();
  const std::string kernel = std::string(MINIVMM_TINY_GUEST_DIR) + "/spin.elf";
  int in_window = 0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    const std::string out_path = ::testing::TempDir() + "/signal_setup_" +
                                 std::to_string(getpid()) + "_" + std::to_string(attempt);
    pid_t pid = fork();
    if (pid == 0) {
      FILE* f = freopen(out_path.c_str(), "w", stderr);
      (void)f;
      execl(MINIVMM_BIN, MINIVMM_BIN, "run", "--timeout", "60", "--kernel", kernel.c_str(),
            nullptr);
      _exit(127);
    }
    for (int i = 0; i < 200000 && !HasKvmFd(pid, "kvm-vm"); ++i) {
    }
    in_window += !HasVcpuFd(pid);
    kill(pid, SIGINT);
    int raw = 0;
    waitpid(pid, &raw, 0);
    std::ifstream in(out_path);
    const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw), 130) << out;
    EXPECT_NE(out.find("stop requested"), std::string::npos) << out;
  }
  EXPECT_GT(in_window, 0) << "no signal came before the vCPU existed";
}

TEST(CliSignalTest, SigtermStopsCleanlyWithStatisticsAnd143) {
  REQUIRE_KVM();
  Outcome o = StopWithSignal(SIGTERM);
  EXPECT_EQ(o.status, 143);
  EXPECT_NE(o.out.find("exits by reason"), std::string::npos) << o.out;
}

TEST(CliSignalTest, SigintClosesThePerfettoTimeline) {
  REQUIRE_KVM();
  std::string path = ::testing::TempDir() + "/sigint.perfetto.json";
  Outcome o = StopWithSignal(SIGINT, path);
  EXPECT_EQ(o.status, 130) << o.out;
  std::ifstream in(path);
  json trace = json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(trace.is_discarded()) << "not JSON: " << path;
  ASSERT_TRUE(trace["traceEvents"].is_array());
  bool stop = false;
  for (const json& e : trace["traceEvents"]) stop |= e.value("name", "") == "stop: stop requested";
  EXPECT_TRUE(stop);
}

}  // namespace
