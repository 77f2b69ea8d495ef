// Whole-VM tests of the PC machine (VmConfig::machine = kPc) with its own
// Multiboot guests (tests/pc_guests): each guest checks the machine from the
// inside and prints key=value lines, which these tests assert exactly with
// the run's exit status and device exit counts.
#include "vmm/machine/pc_machine.h"

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "minivmm/cpu_features.h"
#include "minivmm/machine.h"
#include "tests/common/pc_host.h"
#include "tests/integration/pc_test_util.h"
#include "tests/integration/vm_test_util.h"
#include "vmm/boot/bios_state.h"
#include "vmm/kvm/kvm.h"
#include "vmm/machine/pc_host_check.h"

namespace minivmm::testing {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint32_t kPmTimerHz = 3'579'545;
constexpr uint64_t kPmInterval = 357'954;  // pc_pmtimer's 100 ms

// A parameterised test's name: its value (the vCPUs, the exit code).
std::string ValueName(const ::testing::TestParamInfo<uint32_t>& info) {
  return std::to_string(info.param);
}

std::string Hex(uint64_t v) {
  std::ostringstream out;
  out << "0x" << std::hex << v;
  return out.str();
}

// The host check itself (vmm/machine/pc_host_check.h), as every PC run makes
// it: the probe's #UD reaches its handler in 32-bit protected mode.
TEST(PcHostCheckTest, AnExceptionInProtectedModeReachesItsHandler) {
  REQUIRE_KVM();
  absl::StatusOr<KvmSystem> kvm = KvmSystem::Open();
  ASSERT_TRUE(kvm.ok()) << kvm.status();
  absl::Status check = CheckPcMachineRunsHere(*kvm);
  if (!check.ok()) {
    EXPECT_TRUE(PcRefusedHere(std::string(check.message()))) << check;
  }
}

// A file under the test's scratch directory with `contents`.
std::string WriteTempFile(const std::string& name, const std::string& contents) {
  std::string path = ::testing::TempDir() + "/pc_machine_" + std::to_string(getpid()) + "_" + name;
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

TEST(PcMachineTest, EntryStateAndMultibootInfo) {
  REQUIRE_KVM();
  const std::string module = "pc guest module, first line\nsecond line\n";
  VmConfig config = PcConfig("pc_entry", "a b");
  config.initrd_path = WriteTempFile("initrd", module);
  std::optional<GuestRun> ran = RunPc(config);
  if (!ran) return;
  const GuestRun& run = *ran;
  ExpectDoneWith(run, 0);
  std::map<std::string, std::string> v = ConsoleValues(run.console);
  EXPECT_EQ(v["magic"], "0x2badb002");
  EXPECT_EQ(v["mbi"], "0x9000");
  EXPECT_EQ(v["cr0.pe"], "1");
  EXPECT_EQ(v["cr0.pg"], "0");
  EXPECT_EQ(v["eflags.if"], "0");
  EXPECT_EQ(v["eflags.vm"], "0");
  // MEM | CMDLINE | MODS | MMAP.
  EXPECT_EQ(v["flags"], "0x4d");
  EXPECT_EQ(v["mem_lower"], "639");
  EXPECT_EQ(v["mem_upper"], std::to_string((config.memory_bytes - kMiB) / 1024));
  EXPECT_EQ(v["cmdline"], config.kernel_path + " a b");

  EXPECT_EQ(v["mods_count"], "1");
  EXPECT_EQ(v["mod0.size"], std::to_string(module.size()));
  const uint64_t start = Number(v, "mod0.start", 16);
  EXPECT_EQ(Number(v, "mod0.end", 16) - start, module.size());
  EXPECT_GE(start, kMiB);
  EXPECT_EQ(start % 4096, 0u);
  // The module's string is its path, as QEMU's -initrd.
  EXPECT_EQ(v["mod0.string"], config.initrd_path);
  EXPECT_EQ(v["mod0.first_line"], "pc guest module, first line");

  EXPECT_EQ(v["mmap_entries"], "4");
  EXPECT_EQ(v["mmap0"], "0x0,0x9fc00,1");
  EXPECT_EQ(v["mmap1"], "0x9fc00,0x400,2");
  EXPECT_EQ(v["mmap2"], "0xf0000,0x10000,2");
  EXPECT_EQ(v["mmap3"], "0x100000," + Hex(config.memory_bytes - kMiB) + ",1");
}

class PcDebugExitTest : public ::testing::TestWithParam<uint32_t> {};

// isa-debug-exit: a write of N ends the VM with status (N << 1) | 1.
TEST_P(PcDebugExitTest, StatusIsTheCodeShiftedWithBitZeroSet) {
  REQUIRE_KVM();
  const uint32_t code = GetParam();
  std::optional<GuestRun> ran = RunPc(PcConfig("pc_entry", "exit=" + std::to_string(code)));
  if (!ran) return;
  const GuestRun& run = *ran;
  ExpectDoneWith(run, code);
  EXPECT_EQ(run.Pio("debug-exit"), 1u);
}

INSTANTIATE_TEST_SUITE_P(Codes, PcDebugExitTest, ::testing::Values(0u, 1u, 2u, 42u, 127u),
                         ValueName);

TEST(PcMachineTest, FwCfgAnswersEveryKeyAndCountsEveryPortAccess) {
  REQUIRE_KVM();
  VmConfig config = PcConfig("pc_fwcfg", "", /*cpus=*/2);
  std::optional<GuestRun> ran = RunPc(config);
  if (!ran) return;
  const GuestRun& run = *ran;
  ExpectDoneWith(run, 0);
  std::map<std::string, std::string> v = ConsoleValues(run.console);
  EXPECT_EQ(v["fwcfg.signature"], "QEMU");
  EXPECT_EQ(v["fwcfg.id"], "0x1");  // the traditional interface, no DMA
  EXPECT_EQ(v["fwcfg.ram_bytes"], std::to_string(config.memory_bytes));
  EXPECT_EQ(v["fwcfg.nb_cpus"], "2");
  EXPECT_EQ(v["fwcfg.max_cpus"], "2");
  EXPECT_EQ(v["fwcfg.file_count"], "0");
  EXPECT_EQ(v["fwcfg.nographic"], "1");
  EXPECT_EQ(v["fwcfg.key_0x0b"], "0x0");  // a key without an item
  // Eight selector writes and 4 + 4 + 8 + 2 + 2 + 4 + 2 + 4 data reads.
  EXPECT_EQ(v["fwcfg_port_accesses"], "38");
  EXPECT_EQ(run.Pio("fw-cfg"), 38u);
}

class PcAcpiTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(PcAcpiTest, TablesDescribeEveryCpuAndThePmTimer) {
  REQUIRE_KVM();
  const uint32_t cpus = GetParam();
  std::optional<GuestRun> ran = RunPc(PcConfig("pc_acpi", "", cpus));
  if (!ran) return;
  const GuestRun& run = *ran;
  ExpectDoneWith(run, 0);
  std::map<std::string, std::string> v = ConsoleValues(run.console);
  EXPECT_EQ(v["acpi_checksums_ok"], "1");
  EXPECT_EQ(v["rsdp"], "0xe0000");
  EXPECT_EQ(v["rsdp.revision"], "0");
  EXPECT_EQ(v["rsdt.entries"], "2");
  EXPECT_EQ(v["table0"], "FACP,116");
  // Header and flags (44), a local APIC each (8), the IOAPIC (12), one override (10).
  EXPECT_EQ(v["table1"], "APIC," + std::to_string(44 + 8 * cpus + 12 + 10));
  EXPECT_EQ(v["dsdt.length"], "60");  // the header, \_S3 and \_S5
  EXPECT_EQ(v["fadt.pm1a_evt_blk"], absl::StrFormat("%#x", kPcPm1EventPort));
  EXPECT_EQ(v["fadt.pm1a_cnt_blk"], absl::StrFormat("%#x", kPcPm1ControlPort));
  EXPECT_EQ(v["fadt.pm_tmr_blk"], absl::StrFormat("%#x", kPcPmTimerPort));
  EXPECT_EQ(v["fadt.pm_tmr_len"], "4");
  EXPECT_EQ(v["fadt.tmr_val_ext"], "0");
  EXPECT_EQ(v["madt.lapic_addr"], "0xfee00000");
  EXPECT_EQ(v["madt.flags"], "0x1");
  EXPECT_EQ(v["madt.lapics"], std::to_string(cpus));
  for (uint32_t i = 0; i < cpus; ++i) {
    const std::string id = std::to_string(i);
    EXPECT_EQ(v["madt.lapic" + id], id + "," + id + ",1") << "CPU " << i;
  }
  // The IOAPIC's ID is what KVM's in-kernel IOAPIC resets its ID register to.
  EXPECT_EQ(v["madt.ioapics"], "1");
  EXPECT_EQ(v["madt.ioapic0"], absl::StrFormat("%u,%#x,0", kPcIoapicId, kPcIoapicGpa));
  EXPECT_EQ(v["madt.overrides"], "1");
  EXPECT_EQ(v["madt.override0"], "0,0,2,0x0");
  // The guest read the port the FADT names once: the PM timer's device saw it.
  EXPECT_EQ(v["pm_reads"], "1");
  EXPECT_EQ(run.Pio("pm-timer"), 1u);
  EXPECT_EQ(v["pm_value_high_byte"], "0x0");
}

INSTANTIATE_TEST_SUITE_P(Cpus, PcAcpiTest, ::testing::Values(1u, 2u, 4u), ValueName);

TEST(PcMachineTest, PmTimerIsMonotonicAndCountsAt3579545Hz) {
  REQUIRE_KVM();
  std::optional<GuestRun> ran = RunPc(PcConfig("pc_pmtimer", ""));
  if (!ran) return;
  const GuestRun& run = *ran;
  ExpectDoneWith(run, 0);
  std::map<std::string, std::string> v = ConsoleValues(run.console);
  EXPECT_EQ(v["pm_port"], absl::StrFormat("%#x", kPcPmTimerPort));
  EXPECT_EQ(v["pm_monotonic"], "1");
  EXPECT_EQ(run.Pio("pm-timer"), Number(v, "pm_reads"));
  const uint64_t pm_ticks = Number(v, "pm_ticks");
  const uint64_t tsc_ticks = Number(v, "tsc_ticks");
  ASSERT_GE(pm_ticks, kPmInterval);
  ASSERT_NE(run.result.guest_tsc_khz, 0u) << "KVM did not say the guest's TSC rate";
  const double expected = run.result.guest_tsc_khz * 1000.0 / kPmTimerHz;
  const double measured = static_cast<double>(tsc_ticks) / pm_ticks;
  EXPECT_NEAR(measured, expected, expected * 0.10)
      << tsc_ticks << " TSC ticks over " << pm_ticks << " PM ticks";
}

// What a BIOS would have left (vmm/boot/bios_state.h), seen by pc_bios
// from the inside.
void ExpectBiosVectorsAndPics(const std::map<std::string, std::string>& v) {
  EXPECT_EQ(v.at("ivt_irq0"), Hex(uint32_t{kBiosSegment} << 16 | kBiosMasterIrqOffset));
  EXPECT_EQ(v.at("ivt_irq8"), Hex(uint32_t{kBiosSegment} << 16 | kBiosSlaveIrqOffset));
  EXPECT_EQ(v.at("ivt_other"), Hex(uint32_t{kBiosSegment} << 16 | kBiosIretOffset));
  EXPECT_EQ(v.at("ivt_mismatches"), "0");
  EXPECT_EQ(v.at("pic_master_mask"), Hex(kBiosPicMaster.mask));
  EXPECT_EQ(v.at("pic_slave_mask"), Hex(kBiosPicSlave.mask));
}

// With a PIT, channel 0 runs as the BIOS programs it, and a real-mode
// sti; hlt is woken through the vector table by a handler that leaves
// nothing in service: kvm-unit-tests' realmode waits so.
TEST(PcMachineTest, BiosStateWakesARealModeHaltThroughTheVectorTable) {
  REQUIRE_KVM();
  VmConfig config = PcConfig("pc_bios", "trip");
  config.pit = true;
  std::optional<GuestRun> ran = RunPc(config);
  if (!ran) return;
  const GuestRun& run = *ran;
  ExpectDoneWith(run, 0);
  std::map<std::string, std::string> v = ConsoleValues(run.console);
  ExpectBiosVectorsAndPics(v);
  // The read-back status: OUT (bit 7, either), lo/hi access, the mode, binary.
  EXPECT_EQ(Number(v, "pit_status", 16) & 0x7F, (3u << 4) | (kBiosPitMode << 1)) << run.console;
  EXPECT_EQ(v["real_mode_woken"], "1");
  EXPECT_EQ(v["pic_master_isr"], "0x0");
  EXPECT_EQ(v["pic_slave_isr"], "0x0");
  EXPECT_EQ(run.result.stats.pio_unclaimed, 0u);
}

// Without one, the same vectors and PICs; the PIT's ports are unclaimed
// (a write of the read-back command, a read of all ones).
TEST(PcMachineTest, WithoutAPitTheBiosStateHasNoTimer) {
  REQUIRE_KVM();
  std::optional<GuestRun> ran = RunPc(PcConfig("pc_bios", ""));
  if (!ran) return;
  const GuestRun& run = *ran;
  ExpectDoneWith(run, 0);
  std::map<std::string, std::string> v = ConsoleValues(run.console);
  ExpectBiosVectorsAndPics(v);
  EXPECT_EQ(v["pit_status"], "0xff");
  EXPECT_EQ(v.count("real_mode_woken"), 0u);
  EXPECT_EQ(run.result.stats.pio_unclaimed, 2u);
}

// A run of the PC machine with Hyper-V's enlightenments, or nullopt where
// this host refuses the machine (RunPc) or has no Hyper-V in its KVM, the
// one refusal line asserted.
std::optional<GuestRun> RunHypervPc(const VmConfig& config) {
  absl::StatusOr<KvmSystem> kvm = KvmSystem::Open();
  EXPECT_TRUE(kvm.ok()) << kvm.status();
  if (!kvm.ok() || !CheckPcMachineRunsHere(*kvm).ok()) {
    EXPECT_FALSE(RunPc(config).has_value());
    return std::nullopt;
  }
  if (absl::Status hv = kvm->NeedHyperv(); !hv.ok()) {
    absl::StatusOr<std::unique_ptr<Vm>> vm = Vm::Create(config);
    EXPECT_FALSE(vm.ok());
    if (!vm.ok()) {
      EXPECT_EQ(vm.status().code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_EQ(vm.status().message(),
                "no Hyper-V enlightenments here: " + std::string(hv.message()));
    }
    return std::nullopt;
  }
  return RunPc(config);
}

// Hyper-V's enlightenments (VmConfig::hyperv): Hyper-V's leaves where a
// Hyper-V guest looks and KVM's 0x100 above; the reference counter; SynIC's
// three control writes, each a KVM_EXIT_HYPERV that minivmm counts under
// "hyperv", exactly as many as the guest made. Where KVM has no Hyper-V,
// the one refusal line.
TEST(PcMachineTest, HypervLeavesAndSynicControlExits) {
  REQUIRE_KVM();
  VmConfig config = PcConfig("pc_hyperv", "");
  config.hyperv = true;
  std::optional<GuestRun> ran = RunHypervPc(config);
  if (!ran) return;
  const GuestRun& run = *ran;
  ExpectDoneWith(run, 0);
  std::map<std::string, std::string> v = ConsoleValues(run.console);
  EXPECT_EQ(v["vendor_40000000"], "Linux KVM Hv");
  EXPECT_GE(Number(v, "max_40000000", 16), 0x40000005u);
  EXPECT_EQ(v["vendor_40000100"], "KVMKVMKVM");
  EXPECT_EQ(v["max_40000100"], "0x40000101");
  EXPECT_EQ(v["synic_available"], "1");
  EXPECT_EQ(v["ref_count_available"], "1");
  EXPECT_EQ(v["ref_count_monotonic"], "1");
  EXPECT_EQ(v["scontrol"], "0x1");
  const uint64_t writes = Number(v, "synic_control_writes");
  EXPECT_EQ(writes, 3u);
  EXPECT_EQ(run.result.stats.by_reason[static_cast<int>(ExitReason::kHyperv)], writes);
}

// Exits at the port bus device named `name` (0 if there is none).
uint64_t PioExitsAt(const RunResult& result, std::string_view name) {
  for (size_t i = 0; i < result.pio_devices.size(); ++i) {
    if (result.pio_devices[i] == name) return result.stats.pio_by_device[i];
  }
  return 0;
}

// QEMU's hyperv-testdev with the VMM's side of SynIC (pc_synic, one vCPU):
// SINT routes raised through the device, each raise one interrupt; a message
// connection's delivery into a free slot, msg_pending on a busy one, the
// staged message delivered after EOM, HV_STATUS_INSUFFICIENT_BUFFERS while
// one is staged; an event connection's flag and its one interrupt; unknown
// connections. Every SynIC control write and every hypercall the guest made
// is one `hyperv` exit, but the three HvSignalEvents to its event
// connection where KVM serves them itself (KVM_CAP_HYPERV_EVENTFD, as under
// QEMU); every request one exit at hyperv-testdev; exactly as the guest
// counted them and as its program says (the closed forms below).
TEST(PcMachineTest, HypervTestdevRoutesMessagesAndEvents) {
  REQUIRE_KVM();
  VmConfig config = PcConfig("pc_synic", "");
  config.hyperv = true;
  config.hyperv_testdev = true;
  std::optional<GuestRun> ran = RunHypervPc(config);
  if (!ran) return;
  const GuestRun& run = *ran;
  ExpectDoneWith(run, 0);
  std::map<std::string, std::string> v = ConsoleValues(run.console);
  for (uint32_t sint = 0; sint < 4; ++sint)
    EXPECT_EQ(v["sint" + std::to_string(sint) + "_interrupts"], std::to_string(sint + 1));
  EXPECT_EQ(v["probe_status"], "0x12");  // HV_STATUS_INVALID_CONNECTION_ID
  EXPECT_EQ(v["msg1_status"], "0x0");
  EXPECT_EQ(v["msg1_pending"], "0");
  EXPECT_EQ(v["msg1_interrupts"], "1");
  EXPECT_EQ(v["msg2_status"], "0x0");
  EXPECT_EQ(v["msg2_payload"], v["msg1_payload"]);  // the slot still holds the first
  EXPECT_EQ(v["msg2_pending"], "1");
  EXPECT_EQ(v["msg2_interrupts"], "1");
  EXPECT_EQ(v["msg3_status"], "0x13");  // HV_STATUS_INSUFFICIENT_BUFFERS
  EXPECT_EQ(v["msg_redelivered"], "1");
  EXPECT_EQ(v["msg_redelivered_type"], "0x12345678");
  EXPECT_EQ(v["msg_redelivered_size"], "8");
  EXPECT_EQ(v["msg_redelivered_payload"], "0x5555aaaa3333cccc");  // the third post's
  EXPECT_EQ(v["msg_redelivered_pending"], "0");
  EXPECT_EQ(v["msg_interrupts"], "2");
  EXPECT_EQ(v["msg_unknown_conn_status"], "0x12");
  EXPECT_EQ(v["evt1_status"], "0x0");
  EXPECT_EQ(v["evt1_flag"], "1");
  EXPECT_EQ(v["evt1_interrupts"], "1");
  EXPECT_EQ(v["evt2_interrupts"], "1");  // the flag was set already
  EXPECT_EQ(v["evt3_interrupts"], "2");
  EXPECT_EQ(v["evt_other_flags"], "0x0");
  EXPECT_EQ(v["evt_unknown_conn_status"], "0x12");
  EXPECT_EQ(v["timed_out"], "0");

  // SCONTROL, SIMP and SIEFP on, then off.
  const uint64_t control_writes = Number(v, "synic_control_writes");
  EXPECT_EQ(control_writes, 2u * 3);
  // The probe; three posts and one to an unknown connection; three signals
  // and one to an unknown connection.
  const uint64_t hypercalls = Number(v, "hypercalls");
  EXPECT_EQ(hypercalls, 1u + 4 + 4);
  absl::StatusOr<KvmSystem> kvm = KvmSystem::Open();
  ASSERT_TRUE(kvm.ok()) << kvm.status();
  absl::StatusOr<KvmVm> vm = KvmVm::Create(*kvm);
  ASSERT_TRUE(vm.ok()) << vm.status();
  const uint64_t served_by_kvm = vm->HasHypervEventfd() ? 3 : 0;
  EXPECT_EQ(run.result.stats.by_reason[static_cast<int>(ExitReason::kHyperv)],
            control_writes + hypercalls - served_by_kvm);
  // Four routes created, raised 1 + 2 + 3 + 4 times and destroyed; two
  // connections created and destroyed.
  const uint64_t requests = Number(v, "testdev_writes");
  EXPECT_EQ(requests, 4u + (1 + 2 + 3 + 4) + 4 + 2 * 2);
  EXPECT_EQ(PioExitsAt(run.result, "hyperv-testdev"), requests);
  EXPECT_TRUE(run.result.notes.empty()) << absl::StrJoin(run.result.notes, "\n");
}

// Without the device (hyperv alone), its port is an unclaimed one and the
// connections' hypercalls get QEMU's answer without one: the guest fails
// its checks, within its bounded waits.
TEST(PcMachineTest, WithoutHypervTestdevItsPortIsUnclaimed) {
  REQUIRE_KVM();
  VmConfig config = PcConfig("pc_synic", "");
  config.hyperv = true;
  std::optional<GuestRun> ran = RunHypervPc(config);
  if (!ran) return;
  const GuestRun& run = *ran;
  EXPECT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
  EXPECT_EQ(run.result.exit_code, 3);  // guest_fail
  std::map<std::string, std::string> v = ConsoleValues(run.console);
  EXPECT_EQ(v["sint0_interrupts"], "0");
  EXPECT_EQ(v["probe_status"], "0x2");  // HV_STATUS_INVALID_HYPERCALL_CODE
  EXPECT_EQ(PioExitsAt(run.result, "hyperv-testdev"), 0u);
  EXPECT_EQ(run.result.stats.pio_unclaimed, Number(v, "testdev_writes"));
}

// Without them, KVM's own leaves at 0x40000000 and nothing at 0x40000100;
// no hyperv exit.
TEST(PcMachineTest, WithoutHypervKvmsLeavesComeFirst) {
  REQUIRE_KVM();
  std::optional<GuestRun> ran = RunPc(PcConfig("pc_hyperv", ""));
  if (!ran) return;
  const GuestRun& run = *ran;
  ExpectDoneWith(run, 0);
  std::map<std::string, std::string> v = ConsoleValues(run.console);
  EXPECT_EQ(v["vendor_40000000"], "KVMKVMKVM");
  EXPECT_EQ(v["max_40000000"], "0x40000001");
  EXPECT_EQ(v.count("synic_control_writes"), 0u);
  EXPECT_EQ(run.result.stats.by_reason[static_cast<int>(ExitReason::kHyperv)], 0u);
}

// ACPI S3 as kvm-unit-tests' s3 enters it (pc_s3): the FADT's PM1 blocks,
// the RTC (valid, UIP once a second, today's date in BCD), then S3 with the
// RTC's alarm as the wake event: the vCPU stops at the PM1_CNT write and
// comes back in real mode at the FACS's waking vector, with WAK_STS and
// RTC_STS set, and its resume code exits with code 0 (pc_s3's own checks).
TEST(PcMachineTest, S3SleepsUntilTheRtcAlarmAndResumesAtTheWakingVector) {
  REQUIRE_KVM();
  const absl::Time before = absl::Now();
  std::optional<GuestRun> ran = RunPc(PcConfig("pc_s3", ""));
  if (!ran) return;
  const GuestRun& run = *ran;
  EXPECT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
  EXPECT_EQ(run.result.exit_code, 1) << run.console;  // code 0: (0 << 1) | 1
  EXPECT_NE(run.console.find("sleeping\nresumed\n"), std::string::npos) << run.console;
  std::map<std::string, std::string> v = ConsoleValues(run.console);
  EXPECT_EQ(v["pm1_evt"], absl::StrFormat("%#x", kPcPm1EventPort));
  EXPECT_EQ(v["pm1_cnt"], absl::StrFormat("%#x", kPcPm1ControlPort));
  EXPECT_EQ(v["pm1_cnt_value"], "0x1");  // SCI_EN: ACPI always on
  EXPECT_EQ(v["rtc_reg_d"], "0x80");
  EXPECT_EQ(v["rtc_reg_b"], "0x2");
  EXPECT_EQ(v["rtc_uip_seen"], "1");
  // The date in BCD (century, year, month, day) is today's, UTC, or the
  // next day's where the run crossed midnight.
  auto bcd_date = [](absl::Time t) {
    return "0x" + absl::FormatTime("%Y", t, absl::UTCTimeZone()).substr(0, 2) + "0x" +
           absl::FormatTime("%y", t, absl::UTCTimeZone()) + "0x" +
           absl::FormatTime("%m", t, absl::UTCTimeZone()) + "0x" +
           absl::FormatTime("%d", t, absl::UTCTimeZone());
  };
  // put_hex drops leading zeros: 0x05 prints as 0x5.
  auto unpadded = [](std::string s) {
    for (size_t at = 0; (at = s.find("0x0", at)) != std::string::npos && at + 3 < s.size() &&
                        s[at + 3] != 'x';)
      s.erase(at + 2, 1);
    return s;
  };
  const std::string date = v["rtc_date"];
  EXPECT_TRUE(date == unpadded(bcd_date(before)) || date == unpadded(bcd_date(absl::Now())))
      << date << " vs " << bcd_date(before);
}

// Without RTC_EN in PM1_EN nothing can wake the machine: the run stops as
// halted forever, saying why, before the resume code could run.
TEST(PcMachineTest, S3WithNoWakeEventStopsAsHaltedForever) {
  REQUIRE_KVM();
  std::optional<GuestRun> ran = RunPc(PcConfig("pc_s3", "nowake"));
  if (!ran) return;
  EXPECT_EQ(ran->result.reason, StopReason::kHaltedForever) << ran->result.detail;
  EXPECT_NE(ran->result.detail.find("ACPI S3 with no wake event enabled"), std::string::npos)
      << ran->result.detail;
  EXPECT_EQ(ran->console.find("resumed"), std::string::npos);
}

// S5 is the DSDT's soft off: the run ends with status 0, as QEMU exits.
TEST(PcMachineTest, S5PowersOff) {
  REQUIRE_KVM();
  std::optional<GuestRun> ran = RunPc(PcConfig("pc_s3", "s5"));
  if (!ran) return;
  EXPECT_EQ(ran->result.reason, StopReason::kGuestShutdown) << ran->result.detail;
  EXPECT_EQ(ran->result.exit_code, 0);
  EXPECT_NE(ran->console.find("sleeping\n"), std::string::npos);
}

// S3 with two vCPUs is not modelled: the run stops with that said.
TEST(PcMachineTest, S3WithTwoVcpusIsRefusedAtTheSleep) {
  REQUIRE_KVM();
  std::optional<GuestRun> ran = RunPc(PcConfig("pc_s3", "", /*cpus=*/2));
  if (!ran) return;
  EXPECT_EQ(ran->result.reason, StopReason::kVmmError) << ran->result.detail;
  EXPECT_NE(ran->result.detail.find("in ACPI S3 with 2 vCPUs: minivmm suspends a one-vCPU "
                                    "machine only"),
            std::string::npos)
      << ran->result.detail;
}

class PcSmpTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(PcSmpTest, ApsStartAndIpi) {
  REQUIRE_KVM();
  const uint32_t cpus = GetParam();
  std::optional<GuestRun> ran = RunPc(PcConfig("pc_smp", "", cpus));
  if (!ran) return;
  const GuestRun& run = *ran;
  ExpectDoneWith(run, 0);
  std::map<std::string, std::string> v = ConsoleValues(run.console);
  EXPECT_EQ(v["x2apic_supported"], "1");
  EXPECT_EQ(v["x2apic_mode"], "1");
  EXPECT_EQ(v["hypervisor"], "1");
  EXPECT_EQ(v["fwcfg.nb_cpus"], std::to_string(cpus));
  EXPECT_EQ(v["cpus_up"], std::to_string(cpus));
  const bool has_leaf_b = Number(v, "max_basic_leaf", 16) >= 0xb;
  for (uint32_t i = 0; i < cpus; ++i) {
    const std::string cpu = "cpu" + std::to_string(i) + ".";
    const std::string id = std::to_string(i);
    EXPECT_EQ(v[cpu + "apic_id_leaf1"], id);
    EXPECT_EQ(v[cpu + "x2apic_id"], id);
    if (has_leaf_b) {
      EXPECT_EQ(v[cpu + "apic_id_leafb"], id);
    }
    // Each AP one IPI from the BSP; the BSP one from each AP.
    EXPECT_EQ(v[cpu + "ipis"], std::to_string(i == 0 ? cpus - 1 : 1));
  }
  EXPECT_EQ(v["bsp_ipis"], std::to_string(cpus - 1));
  EXPECT_EQ(v["stray_ipis"], "0");
}

INSTANTIATE_TEST_SUITE_P(Cpus, PcSmpTest, ::testing::Values(1u, 2u, 4u), ValueName);

// The registers pc_cpuid prints, by its keys.
constexpr const char* kCpuidKeys[] = {"1.ecx",        "7.ebx",        "7.ecx",
                                      "80000001.ecx", "80000001.edx", "8000000a.edx"};

// pc_cpuid's key for the register that holds `f` ("1.ecx", "80000001.edx").
std::string CpuidKey(const CpuFeature& f) {
  return absl::StrFormat("%x.%s", f.leaf, std::string(CpuidRegisterName(f.reg)));
}

// --cpu-features and --cpu-vendor (include/minivmm/cpu_features.h) as the
// guest sees them: every listed bit KVM offers here taken away at once is
// clear and every other bit of those registers unchanged; a bit asked for
// that KVM offers stays; one it does not offer stays clear with a warning,
// as QEMU's -cpu, or with cpu_enforce is refused before any vCPU runs; the
// vendor is both leaves'.
TEST(PcMachineTest, CpuFeaturesAndVendorAreWhatTheGuestSees) {
  REQUIRE_KVM();
  std::optional<GuestRun> plain = RunPc(PcConfig("pc_cpuid", ""));
  if (!plain) return;
  ExpectDoneWith(*plain, 0);
  const std::map<std::string, std::string> base = ConsoleValues(plain->console);

  VmConfig config = PcConfig("pc_cpuid", "");
  std::map<std::string, uint32_t> cleared;
  std::vector<std::string> not_offered;
  for (const CpuFeature& f : kCpuFeatures) {
    const std::string key = CpuidKey(f);
    if ((Number(base, key, 16) >> f.bit) & 1) {
      config.cpu_features.push_back({std::string(f.name), false});
      cleared[key] |= 1u << f.bit;
    } else {
      not_offered.emplace_back(f.name);
    }
  }
  // With KVM's local APIC the PC machine always offers x2APIC; VMX and SVM
  // are never both there.
  ASSERT_NE(cleared.count("1.ecx"), 0u) << plain->console;
  ASSERT_FALSE(not_offered.empty()) << plain->console;
  config.cpu_vendor = base.at("vendor") == "GenuineIntel" ? "AuthenticAMD" : "GenuineIntel";
  std::optional<GuestRun> changed = RunPc(config);
  ASSERT_TRUE(changed.has_value());
  ExpectDoneWith(*changed, 0);
  const std::map<std::string, std::string> now = ConsoleValues(changed->console);
  for (const char* key : kCpuidKeys) {
    EXPECT_EQ(Number(now, key, 16), Number(base, key, 16) & ~cleared[key]) << key;
  }
  // The guest sees every bit cleared as asked, and so did the probe that
  // looks before the run (vmm/machine/cpuid_probe.h): nothing said.
  EXPECT_TRUE(changed->result.notes.empty()) << absl::StrJoin(changed->result.notes, "\n");
  EXPECT_EQ(now.at("vendor"), config.cpu_vendor);
  EXPECT_EQ(now.at("vendor_ext"), config.cpu_vendor);

  VmConfig asked = PcConfig("pc_cpuid", "");
  asked.cpu_features = {{"x2apic", true}};
  std::optional<GuestRun> kept = RunPc(asked);
  ASSERT_TRUE(kept.has_value());
  ExpectDoneWith(*kept, 0);
  EXPECT_EQ(ConsoleValues(kept->console).at("1.ecx"), base.at("1.ecx"));

  const std::string why = "cpu feature +" + not_offered.front() +
                          ": this host's KVM does not offer it (KVM_GET_SUPPORTED_CPUID)";
  VmConfig warned = PcConfig("pc_cpuid", "");
  warned.cpu_features = {{not_offered.front(), true}};
  std::optional<GuestRun> left_clear = RunPc(warned);
  ASSERT_TRUE(left_clear.has_value());
  ExpectDoneWith(*left_clear, 0);
  const std::map<std::string, std::string> clear = ConsoleValues(left_clear->console);
  for (const char* key : kCpuidKeys) {
    EXPECT_EQ(clear.at(key), base.at(key)) << key;
  }
  EXPECT_EQ(left_clear->result.notes, std::vector<std::string>{"warning: " + why + "; left clear"});

  VmConfig refused = warned;
  refused.cpu_enforce = true;
  absl::StatusOr<std::unique_ptr<Vm>> vm = Vm::Create(refused);
  ASSERT_FALSE(vm.ok());
  EXPECT_EQ(vm.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(vm.status().message(), why);
}

}  // namespace
}  // namespace minivmm::testing
