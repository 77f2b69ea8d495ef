// Whole-VM tests of the VMM with tiny assembly guests (tests/tiny_guests):
// exact exit counts, and each way a run can end.
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "minivmm/host_info.h"
#include "minivmm_abi/hypercall.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
namespace {

TEST(TinyGuestTest, NullHypercallsAreOneExitEach) {
  REQUIRE_KVM();
  GuestRun run = RunGuest(TinyGuest("null_hypercalls"), "");
  EXPECT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
  EXPECT_EQ(run.result.exit_code, 0);
  // 1000 console_io(write, 0 bytes) and one sched_op(shutdown).
  EXPECT_EQ(run.HypercallExits(MVMM_HC_console_io), 1000u);
  EXPECT_EQ(run.HypercallOps(MVMM_HC_console_io), 1000u);
  EXPECT_EQ(run.HypercallExits(MVMM_HC_sched_op), 1u);
  EXPECT_EQ(run.Pio("hypercall"), 1001u);
  EXPECT_EQ(run.result.stats.by_reason[static_cast<int>(ExitReason::kIo)], 1001u);
  EXPECT_EQ(run.console, "");
}

TEST(TinyGuestTest, TripleFaultStopsTheRun) {
  REQUIRE_KVM();
  GuestRun run = RunGuest(TinyGuest("triple_fault"), "");
  EXPECT_EQ(run.result.reason, StopReason::kTripleFault) << run.result.detail;
}

TEST(TinyGuestTest, HaltWithInterruptsOffStopsAtOnce) {
  REQUIRE_KVM();
  GuestRun run = RunGuest(TinyGuest("halt_irq_off"), "");
  EXPECT_EQ(run.result.reason, StopReason::kHaltedForever) << run.result.detail;
  EXPECT_EQ(run.result.stats.by_reason[static_cast<int>(ExitReason::kHlt)], 1u);
}

TEST(TinyGuestTest, SpinningGuestEndsByTimeout) {
  REQUIRE_KVM();
  GuestRun run = RunGuest(TinyGuest("spin"), "", absl::Milliseconds(300));
  EXPECT_EQ(run.result.reason, StopReason::kTimeout) << run.result.detail;
  EXPECT_GE(run.result.elapsed, absl::Milliseconds(300));
}

TEST(TinyGuestTest, EmulationFailureIsItsOwnStop) {
  REQUIRE_KVM();
  absl::StatusOr<HostBehaviour> host = ProbeHostBehaviour();
  ASSERT_TRUE(host.ok()) << host.status();
  ASSERT_TRUE(host->ring0_emulated.measured()) << host->ring0_emulated.evidence;
  GuestRun run = RunGuest(TinyGuest("emulation_failure"), "");
  if (*host->ring0_emulated.value) {
    // popcnt in ring 0 is one of the instructions the software backend's
    // emulator lacks (docs/hosts.md).
    EXPECT_EQ(run.result.reason, StopReason::kEmulationFailure) << run.result.detail;
  } else {
    EXPECT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
  }
}

TEST(TinyGuestTest, HypercallFromRing3IsRefusedWithEperm) {
  REQUIRE_KVM();
  absl::StatusOr<HostBehaviour> host = ProbeHostBehaviour();
  ASSERT_TRUE(host.ok()) << host.status();
  ASSERT_TRUE(host->ring0_emulated.measured()) << host->ring0_emulated.evidence;
  GuestRun run = RunGuest(TinyGuest("cpl3_hypercall"), "", absl::Milliseconds(500));
  if (*host->ring0_emulated.value) {
    // IOPL is forced to 0 here, so ring 3 cannot even reach the port: the
    // `out` raises #GP and, with no IDT, the guest triple-faults. The CPL
    // check itself is covered by the dispatcher's unit tests.
    EXPECT_EQ(run.result.reason, StopReason::kTripleFault) << run.result.detail;
    EXPECT_EQ(run.result.stats.hc_refused_cpl3, 0u);
    return;
  }
  EXPECT_EQ(run.result.reason, StopReason::kTimeout) << run.result.detail;
  EXPECT_EQ(run.result.stats.hc_refused_cpl3, 1u);
  EXPECT_EQ(run.HypercallOps(MVMM_HC_sched_op), 0u);
  EXPECT_EQ(static_cast<int64_t>(run.Register("r15")), -MVMM_EPERM);
}

TEST(TinyGuestTest, GdtStoresAreValidatedAndCounted) {
  REQUIRE_KVM();
  GuestRun run = RunGuest(TinyGuest("gdt_stores"), "", absl::Seconds(10));
  // The segment load from slot 7 completes only because the VMM stored the
  // descriptor with its accessed bit set.
  EXPECT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
  EXPECT_EQ(run.result.stats.gdt_stores_applied, 1u);
  EXPECT_EQ(run.result.stats.gdt_stores_rejected, 4u);
  EXPECT_EQ(run.Mmio("gdt"), 5u);
  const CauseCount& updates = run.result.stats.causes[static_cast<int>(Cause::kDescriptorUpdate)];
  EXPECT_EQ(updates.ops, 1u);
  EXPECT_EQ(updates.exits, 1u);
  EXPECT_EQ(run.result.notes.size(), 4u);  // one note per kind of rejected store
}

}  // namespace
}  // namespace minivmm::testing

namespace minivmm::testing {
namespace {

TEST(TinyGuestTimerTest, TimerWakesBlockedAndHaltedVcpu) {
  REQUIRE_KVM();
  // sched_op(block) with a one-shot timer already due, then HLT woken by the
  // periodic timer: at least two interrupts are taken before the shutdown (a
  // periodic tick may land in the instruction or two where IF is set), and
  // the guest took exactly the interrupts the VMM injected.
  GuestRun run = RunGuest(TinyGuest("block_wake"), "", absl::Seconds(20), /*timer_hz=*/200);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
  EXPECT_GE(run.result.exit_code, 2);
  EXPECT_EQ(run.result.stats.timer_injections, static_cast<uint64_t>(run.result.exit_code));
  EXPECT_EQ(run.HypercallOps(MVMM_HC_set_timer_op), 1u);
  EXPECT_EQ(run.result.stats.by_reason[static_cast<int>(ExitReason::kHlt)], 1u);
}

TEST(TinyGuestTimerTest, BlockWithNoTimerArmedStopsInsteadOfHanging) {
  REQUIRE_KVM();
  // The same guest with no periodic timer: the one-shot fires for the block,
  // but nothing can wake the HLT, so the run ends as halted forever.
  GuestRun run = RunGuest(TinyGuest("block_wake"), "", absl::Seconds(20), /*timer_hz=*/0);
  EXPECT_EQ(run.result.reason, StopReason::kHaltedForever) << run.result.detail;
  EXPECT_EQ(run.result.stats.timer_injections, 1u);
}

// docs/hypercalls.md's once-open rows (tests/tiny_guests/abi_answers.S):
// the guest checks each answer it can see (exit code 1-11 names the first
// that failed); the counts the VMM keeps are checked here.
TEST(TinyGuestTest, TheOnceOpenAbiRowsHoldInAWholeVm) {
  REQUIRE_KVM();
  GuestRun run = RunGuest(TinyGuest("abi_answers"), "", absl::Seconds(60), 0, false, 2);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
  // 7: the first accepted shutdown of the last batch; the entries after it
  // ran (the console write) and no later one changed the code.
  EXPECT_EQ(run.result.exit_code, 7) << "a code of 1-11 is the guest's failing step";
  EXPECT_EQ(run.console, "ok\nafter\n");
  ASSERT_EQ(run.result.per_vcpu.size(), 2u);
  const ExitStats& cpu0 = run.result.per_vcpu[0];
  // Count 0 with a list outside RAM: one exit of the cause, no op, no error.
  for (Cause c : {Cause::kPageTableUpdate, Cause::kCr3Write}) {
    SCOPED_TRACE(std::string(CauseName(c)));
    EXPECT_EQ(cpu0.causes[static_cast<int>(c)].exits, 1u);
    EXPECT_EQ(cpu0.causes[static_cast<int>(c)].ops, 0u);
  }
  EXPECT_EQ(cpu0.hc_errors[MVMM_HC_mmu_update], 0u);
  EXPECT_EQ(cpu0.hc_errors[MVMM_HC_mmuext_op], 0u);
  // The op with bit 32 set names no hypercall.
  EXPECT_EQ(cpu0.hc_bad_number, 1u);
  EXPECT_EQ(cpu0.hc_ops[MVMM_HC_console_io], 2u);
  // Three lock_waits, one refused; the one kick came from CPU 1.
  EXPECT_EQ(cpu0.hc_exits[MVMM_HC_lock_wait], 3u);
  EXPECT_EQ(cpu0.hc_errors[MVMM_HC_lock_wait], 1u);
  EXPECT_EQ(run.result.per_vcpu[1].hc_exits[MVMM_HC_lock_kick], 1u);
  EXPECT_EQ(cpu0.lock_waits_slept, 0u);
  // Entries count as direct calls would: yield_to and the deferred flush
  // once each; the shutdown with code 300 is the one sched_op error.
  EXPECT_EQ(cpu0.directed_yields, 1u);
  EXPECT_EQ(cpu0.tlb_flushes_deferred, 1u);
  EXPECT_EQ(cpu0.hc_exits[MVMM_HC_multicall], 3u);
  EXPECT_EQ(cpu0.hc_ops[MVMM_HC_sched_op], 5u);
  EXPECT_EQ(cpu0.hc_exits[MVMM_HC_sched_op], 0u);
  EXPECT_EQ(cpu0.hc_errors[MVMM_HC_sched_op], 1u);
}

// What CPUID tells each vCPU of the built-in machine (docs/design.md
// "CPUID"): its own APIC ID, in leaf 1 and, where the CPU has leaf 0xB, as
// its x2APIC ID; no APIC, x2APIC or TSC-deadline bit (there is no local
// APIC); the hypervisor bit. The cpuid guest writes what it read to port
// 0x80, whose unclaimed writes the recent exits keep with their bytes: 4 per
// vCPU, 5 where its highest basic leaf is 0xB or more.
class CpuidGuestTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(CpuidGuestTest, EachVcpuHasItsOwnApicIdAndNoApicBits) {
  REQUIRE_KVM();
  const uint32_t cpus = GetParam();
  VmConfig config = GuestConfig(TinyGuest("cpuid"), "");
  config.cpus = cpus;
  config.recent_exits = 16;
  const GuestRun run = RunGuestWith(config);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
  ASSERT_EQ(run.result.exit_code, 0);
  ASSERT_EQ(run.result.recent_exits.size(), cpus);
  for (uint32_t v = 0; v < cpus; ++v) {
    std::vector<uint32_t> read;
    for (const RecentExit& e : run.result.recent_exits[v]) {
      if (e.reason == ExitReason::kIo && !e.hypercall && e.address == 0x80 && e.write &&
          e.size == 4)
        read.push_back(static_cast<uint32_t>(e.detail));
    }
    ASSERT_GE(read.size(), 4u) << "vCPU " << v;
    const uint32_t ebx = read[0], ecx = read[1], edx = read[2], highest_leaf = read[3];
    const bool has_leaf_b = highest_leaf >= 0xb;
    ASSERT_EQ(read.size(), has_leaf_b ? 5u : 4u) << "vCPU " << v;
    EXPECT_EQ(run.result.per_vcpu[v].pio_unclaimed, read.size()) << "vCPU " << v;
    EXPECT_EQ(ebx >> 24, v);
    EXPECT_EQ(ecx & (1u << 21), 0u) << "x2APIC on vCPU " << v;
    EXPECT_EQ(ecx & (1u << 24), 0u) << "TSC deadline on vCPU " << v;
    EXPECT_NE(ecx & (1u << 31), 0u) << "no hypervisor bit on vCPU " << v;
    EXPECT_EQ(edx & (1u << 9), 0u) << "APIC on vCPU " << v;
    if (has_leaf_b) {
      EXPECT_EQ(read[4], v) << "x2APIC ID of vCPU " << v;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cpus, CpuidGuestTest, ::testing::Values(1u, 2u, 4u));

// --cpu-features as the guest sees it (vmm/machine/cpuid_probe.h): with
// XSAVE and PCID taken away, the cpuid guest reads leaf 1 in the built-in
// machine's own VM; a bit it still sees set is exactly the one the run's
// notes say this host's KVM shows anyway (a probe before the run read it),
// and --cpu-enforce refuses the VM for it. kvm_pvm keeps XSAVE whatever the
// table says (docs/hosts.md); other KVMs clear it as asked.
TEST(CpuidGuestTest, ABitTheHostShowsAnywayIsSaidAsTheGuestSeesIt) {
  REQUIRE_KVM();
  VmConfig config = GuestConfig(TinyGuest("cpuid"), "");
  config.recent_exits = 16;
  config.cpu_features = {{"xsave", false}, {"pcid", false}};
  const GuestRun run = RunGuestWith(config);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
  std::vector<uint32_t> read;
  for (const RecentExit& e : run.result.recent_exits.at(0)) {
    if (e.reason == ExitReason::kIo && !e.hypercall && e.address == 0x80 && e.write && e.size == 4)
      read.push_back(static_cast<uint32_t>(e.detail));
  }
  ASSERT_GE(read.size(), 4u);
  const uint32_t ecx = read[1];
  EXPECT_EQ(ecx & (1u << 17), 0u) << "PCID";
  const bool xsave_seen = (ecx & (1u << 26)) != 0;
  const std::string line =
      "cpu feature -xsave: this host's KVM shows it to the guest whatever KVM_SET_CPUID2 says "
      "(CPUID.1:ECX[26] = 1)";
  EXPECT_EQ(run.result.notes, xsave_seen
                                  ? std::vector<std::string>{"warning: " + line + "; left set"}
                                  : std::vector<std::string>{});
  config.cpu_enforce = true;
  absl::StatusOr<std::unique_ptr<Vm>> vm = Vm::Create(config);
  if (xsave_seen) {
    ASSERT_FALSE(vm.ok());
    EXPECT_EQ(vm.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(vm.status().message(), line);
  } else {
    EXPECT_TRUE(vm.ok()) << vm.status();
  }
}

}  // namespace
}  // namespace minivmm::testing
