// The run loop against a scripted vCPU: no /dev/kvm. Each test feeds a
// sequence of exits and checks the counters and how the run ends.
#include "vmm/run/run_loop.h"

#include <cerrno>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "hypercalls/dispatcher.h"
#include "hypercalls/hypercall_port.h"
#include "minivmm_abi/boot.h"
#include "tests/common/fake_vm.h"

namespace minivmm {
namespace {

// Plays back exits; before each exit it may set registers (a hypercall's
// number and arguments) the way the guest would have.
class ScriptedVcpu final : public Vcpu {
 public:
  ScriptedVcpu() : Vcpu(state.regs, &state.dirty, 1, &state.cpl) {}
  struct Step {
    VcpuExit exit;
    std::vector<std::pair<Reg, uint64_t>> regs;
    // What the guest (or another thread) does before this exit, if anything.
    std::function<void()> before = nullptr;
  };
  std::deque<Step> script;
  PlainVcpuState state;
  int injected = 0;
  std::vector<uint32_t> vectors;  // injected, in order
  bool window = false;
  // KVM's ready_for_interrupt_injection and if_flag at once (the tests
  // before the rule was a function set both).
  bool ready = true;
  // model_kvm: the inputs of the readiness rule as KvmVcpu gives them. Each
  // Run() applies the step's registers as the guest's own (not dirty), then
  // the handlers' writes mark them dirty until the next Run(); KVM's flags
  // are `ready` and `if_flag`, and `flags_current` says whether KVM wrote
  // them at the last return. Off: dirty registers are not modelled and
  // `ready` alone decides, as the tests written before the model expect.
  bool model_kvm = false;
  bool if_flag = true;
  bool flags_current = true;
  VcpuIdentity identity = BootIdentity(0);
  std::vector<uint8_t> scratch = std::vector<uint8_t>(64);

  VcpuExit Run() override {
    if (script.empty()) return RunFailed{EIO};
    Step step = std::move(script.front());
    script.pop_front();
    if (step.before) step.before();
    if (model_kvm) state.dirty = 0;  // KVM applied the handlers' writes at this entry
    for (auto [reg, value] : step.regs) state.Set(reg, value);
    if (model_kvm) state.dirty = 0;  // the guest's own registers at this exit
    return step.exit;
  }
  VcpuInterruptState InterruptState() const override {
    if (!model_kvm) return {false, ready, ready, ready, true};
    return {.regs_dirty = state.dirty != 0,
            .synced_if = (state.Get(Reg::kRflags) & MVMM_RFLAGS_IF) != 0,
            .kvm_ready = ready,
            .kvm_if_flag = if_flag,
            .kvm_flags_current = flags_current};
  }
  VcpuIdentity Identity() const override { return identity; }
  absl::Status InjectInterrupt(uint32_t vector) override {
    EXPECT_TRUE(vector == MVMM_TIMER_VECTOR || vector == MVMM_IPI_VECTOR) << vector;
    ++injected;
    vectors.push_back(vector);
    return absl::OkStatus();
  }
  void RequestInterruptWindow(bool on) override { window = on; }
  void Kick() override {}
  void ClearKick() override {}
  std::vector<std::pair<std::string, uint64_t>> DumpRegisters() const override { return {}; }
  uint64_t Cr0() const override { return state.Cr0(); }
  void SetCr0(uint64_t value) override { state.SetCr0(value); }
  uint64_t Cr3() const override { return state.Cr3(); }
  void SetCr3(uint64_t value) override { state.SetCr3(value); }
  uint64_t FsBase() const override { return state.FsBase(); }
  void SetFsBase(uint64_t value) override { state.SetFsBase(value); }
};

// vCPU 0's timer can fire (`can_fire`) or not; no other vCPU has one.
std::function<bool(uint32_t)> VcpuZeroTimer(bool can_fire) {
  return [can_fire](uint32_t cpu) { return cpu == 0 && can_fire; };
}

class RunLoopTest : public ::testing::Test {
 protected:
  RunLoopTest() { EXPECT_TRUE(pio_.Register(MVMM_HYPERCALL_PORT, 4, &port_).ok()); }

  RunStop Run(bool timer_can_fire = false) {
    RunLoop loop(
        RunLoopParts{vcpu_, pio_, mmio_, signals_, VcpuZeroTimer(timer_can_fire), Hypercalls()});
    RunStop stop = loop.Loop();
    stats_ = loop.stats();
    notes_ = loop.notes();
    return stop;
  }

  // Run() as vCPU `vcpu_id`, with the VM's big lock when one is given, and
  // among the vCPUs of `cpus` when given.
  RunStop RunAs(uint32_t vcpu_id, std::mutex* big_lock = nullptr, bool timer_can_fire = false,
                VmCpus* cpus = nullptr) {
    RunLoop loop(RunLoopParts{vcpu_, pio_, mmio_, signals_, VcpuZeroTimer(timer_can_fire),
                              Hypercalls(), nullptr, false, vcpu_id, big_lock, cpus});
    RunStop stop = loop.Loop();
    stats_ = loop.stats();
    idle_at_stop_ = loop.idle_at_stop();
    return stop;
  }

  uint32_t Runstate(uint64_t gpa) const {
    return vm_.memory.ReadObj<uint32_t>(GuestAddress(gpa)).value();
  }
  // Runstate() from another thread, as another vCPU's exit handler reads
  // guest memory: under the big lock, which the loop holds while it writes.
  uint32_t RunstateUnder(std::mutex& big_lock, uint64_t gpa) const {
    std::lock_guard lock(big_lock);
    return Runstate(gpa);
  }

  // Run() with an exit observer, which also sees the report store.
  RunStop RunObserved(const ExitObserver& observer) {
    RunLoop loop(
        RunLoopParts{vcpu_, pio_, mmio_, signals_, VcpuZeroTimer(false), Hypercalls(), &observer});
    RunStop stop = loop.Loop();
    stats_ = loop.stats();
    return stop;
  }

  // Run() keeping the vCPU's last `kept` exits (RunLoopParts::recent_exits).
  std::vector<RecentExit> RunKeepingRecent(uint32_t kept, RunStop* stop = nullptr) {
    RunLoopParts parts{vcpu_, pio_, mmio_, signals_, VcpuZeroTimer(false), Hypercalls()};
    parts.recent_exits = kept;
    RunLoop loop(std::move(parts));
    RunStop s = loop.Loop();
    if (stop != nullptr) *stop = s;
    stats_ = loop.stats();
    return loop.recent_exits();
  }

  // Run() with the GDT base and TR the VMM gave the vCPU checked at each
  // hypercall exit.
  RunStop RunCheckingIdentity(const VcpuIdentity& identity) {
    RunLoopParts parts{vcpu_, pio_, mmio_, signals_, VcpuZeroTimer(false), Hypercalls()};
    parts.identity = identity;
    RunLoop loop(std::move(parts));
    RunStop stop = loop.Loop();
    stats_ = loop.stats();
    return stop;
  }

  HypercallParts Hypercalls() {
    return {vm_.dispatcher, vm_.memory, {}, nullptr, nullptr, &vm_.reports};
  }

  // An `out %eax, $0xEC` exit with the hypercall's registers.
  void Hypercall(uint32_t nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0,
                 std::function<void()> before = nullptr) {
    out_data_.push_back(std::vector<uint8_t>(4));
    vcpu_.script.push_back({IoOut{MVMM_HYPERCALL_PORT, 4, out_data_.back()},
                            {{Reg::kRax, nr}, {Reg::kRdi, a0}, {Reg::kRsi, a1}, {Reg::kRdx, a2}},
                            std::move(before)});
  }
  void Exit(VcpuExit exit) { vcpu_.script.push_back({exit, {}}); }

  uint64_t Reason(ExitReason r) const { return stats_.by_reason[static_cast<int>(r)]; }

  testing::FakeVm vm_;  // RAM, reports and dispatcher; its vCPU is unused
  HypercallPort port_;
  Bus pio_{"pio"};
  Bus mmio_{"mmio"};
  VmSignals signals_;
  ScriptedVcpu vcpu_;
  ExitStats stats_;
  bool idle_at_stop_ = false;
  std::vector<std::string> notes_;
  std::deque<std::vector<uint8_t>> out_data_;
};

TEST_F(RunLoopTest, ShutdownHypercallStopsWithTheGuestsCode) {
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 7);
  RunStop stop = Run();
  EXPECT_EQ(stop.reason, StopReason::kGuestShutdown);
  EXPECT_EQ(stop.exit_code, 7);
  EXPECT_EQ(Reason(ExitReason::kIo), 1u);
  EXPECT_EQ(stats_.hc_exits[MVMM_HC_sched_op], 1u);
  EXPECT_EQ(stats_.pio_by_device[0], 1u);
}

// What --trace is built from: each exit's times (exit before re-entry, in
// order) and a report hypercall's new entries.
TEST_F(RunLoopTest, ObserverSeesTimesInOrderAndTheReportsEntries) {
  const std::string text = "a=1\nb=x\n";
  vm_.PokeBytes(0x1000, text);
  Hypercall(MVMM_HC_set_if, 1);
  Hypercall(MVMM_HC_report, 0x1000, text.size());
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  struct Seen {
    int64_t hypercall, exit_ns, resume_ns;
    std::vector<std::pair<std::string, std::string>> reports;
  };
  std::vector<Seen> seen;
  RunObserved([&](const ExitEvent& e) {
    seen.push_back({e.hypercall, e.exit_ns, e.resume_ns, {e.reports.begin(), e.reports.end()}});
  });
  ASSERT_EQ(seen.size(), 3u);
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_GT(seen[i].exit_ns, 0);
    EXPECT_LE(seen[i].exit_ns, seen[i].resume_ns);
    if (i > 0) {
      EXPECT_LE(seen[i - 1].resume_ns, seen[i].exit_ns);
    }
  }
  EXPECT_TRUE(seen[0].reports.empty());
  EXPECT_EQ(seen[1].hypercall, MVMM_HC_report);
  EXPECT_EQ(seen[1].reports,
            (std::vector<std::pair<std::string, std::string>>{{"a", "1"}, {"b", "x"}}));
  EXPECT_TRUE(seen[2].reports.empty());
}

TEST_F(RunLoopTest, EachHypercallIsCountedOnceAsExitAndOp) {
  for (int i = 0; i < 5; ++i) Hypercall(MVMM_HC_set_if, i % 2);
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  Run();
  EXPECT_EQ(stats_.hc_exits[MVMM_HC_set_if], 5u);
  EXPECT_EQ(stats_.hc_ops[MVMM_HC_set_if], 5u);
  EXPECT_EQ(stats_.causes[static_cast<int>(Cause::kIfSet)].exits, 2u);
  EXPECT_EQ(stats_.causes[static_cast<int>(Cause::kIfClear)].exits, 3u);
  EXPECT_EQ(Reason(ExitReason::kIo), 6u);
}

TEST_F(RunLoopTest, UnclaimedPortReadsAllOnesAndIsCounted) {
  std::vector<uint8_t> in(2, 0);
  Exit(IoIn{0x1234, 2, in});
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  Run();
  EXPECT_EQ(in, std::vector<uint8_t>({0xff, 0xff}));
  EXPECT_EQ(stats_.pio_unclaimed, 1u);
}

TEST_F(RunLoopTest, RepOutsIsOneBusAccessPerElement) {
  std::vector<uint8_t> data(12);
  Exit(IoOut{0x1234, 4, data});  // three 4-byte elements, nothing there
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  Run();
  EXPECT_EQ(Reason(ExitReason::kIo), 2u);
  EXPECT_EQ(stats_.pio_unclaimed, 3u);
}

TEST_F(RunLoopTest, TripleFaultStops) {
  Exit(Shutdown{});
  EXPECT_EQ(Run().reason, StopReason::kTripleFault);
  EXPECT_EQ(Reason(ExitReason::kShutdown), 1u);
}

TEST_F(RunLoopTest, EmulationFailureStops) {
  Exit(InternalError{1});
  EXPECT_EQ(Run().reason, StopReason::kEmulationFailure);
}

TEST_F(RunLoopTest, FailedEntryIsAVmmError) {
  Exit(FailEntry{0x80000021});
  EXPECT_EQ(Run().reason, StopReason::kVmmError);
}

// KVM_EXIT_IOAPIC_EOI goes to the machine's own IOAPIC, counted as
// ioapic_eoi; on a machine without one it stops the run.
class RecordingIoapicEoi final : public IoapicEoiSink {
 public:
  void IoapicEoi(uint8_t vector) override { vectors.push_back(vector); }
  std::vector<uint8_t> vectors;
};

TEST_F(RunLoopTest, IoapicEoiGoesToTheMachinesIoapic) {
  Exit(IoapicEoi{0xE3});
  Exit(IoapicEoi{0x41});
  Exit(Shutdown{});
  RecordingIoapicEoi ioapic;
  RunLoopParts parts{vcpu_, pio_, mmio_, signals_, VcpuZeroTimer(false), Hypercalls()};
  parts.ioapic_eoi = &ioapic;
  RunLoop loop(std::move(parts));
  EXPECT_EQ(loop.Loop().reason, StopReason::kTripleFault);
  EXPECT_EQ(loop.stats().by_reason[static_cast<int>(ExitReason::kIoapicEoi)], 2u);
  EXPECT_EQ(ioapic.vectors, (std::vector<uint8_t>{0xE3, 0x41}));
}

TEST_F(RunLoopTest, IoapicEoiWithoutAnIoapicOfTheMachinesIsAVmmError) {
  Exit(IoapicEoi{0xE3});
  const RunStop stop = Run();
  EXPECT_EQ(stop.reason, StopReason::kVmmError);
  EXPECT_NE(stop.detail.find("an IOAPIC EOI exit reached minivmm"), std::string::npos)
      << stop.detail;
  EXPECT_EQ(Reason(ExitReason::kIoapicEoi), 1u);
}

TEST_F(RunLoopTest, VcpuErrorIsAVmmError) {
  EXPECT_EQ(Run().reason, StopReason::kVmmError);  // empty script: Run() fails
}

TEST_F(RunLoopTest, HaltWithInterruptsOffNeverWakes) {
  vcpu_.state.Set(Reg::kRflags, 0x2);
  Exit(Hlt{});
  RunStop stop = Run(/*timer_can_fire=*/true);
  EXPECT_EQ(stop.reason, StopReason::kHaltedForever);
  EXPECT_NE(stop.detail.find("interrupts disabled"), std::string::npos);
}

TEST_F(RunLoopTest, HaltWithNoTimerNeverWakes) {
  vcpu_.state.Set(Reg::kRflags, 0x202);
  Exit(Hlt{});
  EXPECT_EQ(Run(/*timer_can_fire=*/false).reason, StopReason::kHaltedForever);
}

// A secondary CPU has no timer: a halt or block that nothing can end is
// idle, not a stop of the run; it ends when the VM stops.
TEST_F(RunLoopTest, SecondaryCpuHaltWithInterruptsOffIdlesUntilTheVmStops) {
  vcpu_.state.Set(Reg::kRflags, 0x2);
  vcpu_.script.push_back({Hlt{}, {}, [this] { signals_.VmStopped(); }});
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);  // never reached
  RunStop stop = RunAs(1);
  EXPECT_TRUE(stop.vm_stopped);
  EXPECT_TRUE(idle_at_stop_);
  EXPECT_EQ(Reason(ExitReason::kHlt), 1u);
  EXPECT_EQ(Reason(ExitReason::kIo), 0u);
}

// The run-state area says "blocked" while the vCPU sleeps; another thread
// (here the test, as another CPU would) sees it and stops the run, which
// wakes the vCPU without ever entering the guest again.
TEST_F(RunLoopTest, SecondaryCpuBlocksWithItsRunstateBlockedUntilAStop) {
  constexpr uint64_t kRunstate = 0x5000;
  std::mutex big_lock;
  Hypercall(MVMM_HC_vcpu_op, MVMM_VCPUOP_REGISTER_RUNSTATE_AREA, 2, kRunstate);
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_BLOCK);
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);  // never reached
  std::thread other([&] {
    while (RunstateUnder(big_lock, kRunstate) != MVMM_RUNSTATE_BLOCKED) std::this_thread::yield();
    signals_.RequestStop();
  });
  RunStop stop = RunAs(2, &big_lock);
  other.join();
  EXPECT_EQ(stop.reason, StopReason::kStopRequested);
  EXPECT_FALSE(stop.vm_stopped);
  EXPECT_TRUE(idle_at_stop_);
  EXPECT_EQ(stats_.hc_exits[MVMM_HC_vcpu_op], 1u);
  EXPECT_EQ(stats_.hc_exits[MVMM_HC_sched_op], 1u);
  EXPECT_EQ(Runstate(kRunstate), MVMM_RUNSTATE_BLOCKED);
}

// Block() sleeps without the VM's big lock: another vCPU thread can handle
// its exits meanwhile (here: the test takes the lock while the vCPU sleeps).
TEST_F(RunLoopTest, BlockSleepsWithoutTheBigLock) {
  constexpr uint64_t kRunstate = 0x5000;
  std::mutex big_lock;
  Hypercall(MVMM_HC_vcpu_op, MVMM_VCPUOP_REGISTER_RUNSTATE_AREA, 1, kRunstate);
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_BLOCK);
  std::thread other([&] {
    while (RunstateUnder(big_lock, kRunstate) != MVMM_RUNSTATE_BLOCKED) std::this_thread::yield();
    std::lock_guard lock(big_lock);
    signals_.VmStopped();
  });
  RunStop stop = RunAs(1, &big_lock);
  other.join();
  EXPECT_TRUE(stop.vm_stopped);
  EXPECT_TRUE(idle_at_stop_);
}

// A block that an interrupt ends writes "running" back.
TEST_F(RunLoopTest, BootCpuBlockWokenByAnInterruptWritesRunningBack) {
  constexpr uint64_t kRunstate = 0x5000;
  Hypercall(MVMM_HC_vcpu_op, MVMM_VCPUOP_REGISTER_RUNSTATE_AREA, 0, kRunstate);
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_BLOCK, 0, 0, [this] {
    vcpu_.state.Set(Reg::kRflags, 0x2);  // IF off: the interrupt stays pending
    signals_.raised.fetch_or(VmSignals::kInterrupt);
  });
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  vcpu_.ready = false;
  RunStop stop = RunAs(0, nullptr, /*timer_can_fire=*/true);
  EXPECT_EQ(stop.reason, StopReason::kGuestShutdown);
  EXPECT_FALSE(idle_at_stop_);
  EXPECT_EQ(Runstate(kRunstate), MVMM_RUNSTATE_RUNNING);
}

TEST_F(RunLoopTest, HaltWithPendingInterruptResumesAndRequestsAWindow) {
  vcpu_.state.Set(Reg::kRflags, 0x202);
  vcpu_.ready = false;  // not injectable before the first entry
  signals_.raised = VmSignals::kInterrupt;
  Exit(Hlt{});
  Exit(IrqWindowOpen{});
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  // After the HLT the interrupt is still pending; make it injectable.
  vcpu_.ready = false;
  RunStop stop = Run(/*timer_can_fire=*/false);
  EXPECT_EQ(stop.reason, StopReason::kGuestShutdown);
  EXPECT_TRUE(vcpu_.window);  // never became ready: the window stays requested
  EXPECT_EQ(vcpu_.injected, 0);
  EXPECT_EQ(stats_.causes[static_cast<int>(Cause::kIfSet)].exits, 1u);  // the window exit
}

TEST_F(RunLoopTest, PendingInterruptIsInjectedWhenReady) {
  signals_.raised = VmSignals::kInterrupt;
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  Run();
  EXPECT_EQ(vcpu_.injected, 1);
  EXPECT_EQ(stats_.timer_injections, 1u);
  EXPECT_EQ(signals_.Raised() & VmSignals::kInterrupt, 0u);
}

// The shared-memory interrupt flag (minivmm_abi/boot.h): the guest's
// evtchn_upcall_mask and the VMM's evtchn_upcall_pending at MVMM_VCPU_INFO_GPA.
constexpr uint64_t kPendingAt = MVMM_VCPU_INFO_GPA;
constexpr uint64_t kMaskAt = MVMM_VCPU_INFO_GPA + 1;

TEST_F(RunLoopTest, MaskedInterruptWaitsAsPendingUntilForceEvtchnCallback) {
  vm_.ram[kMaskAt] = 1;
  Hypercall(MVMM_HC_vcpu_op, MVMM_VCPUOP_REGISTER_VCPU_INFO, 0, MVMM_VCPU_INFO_GPA);
  // A tick kicks the vCPU out while the guest is masked (IF=1 all along).
  vcpu_.script.push_back({Interrupted{}, {}, [&] { signals_.raised |= VmSignals::kInterrupt; }});
  // The guest unmasks, finds pending set and forces the callback.
  Hypercall(MVMM_HC_force_evtchn_callback, 0, 0, 0, [&] {
    EXPECT_EQ(vcpu_.injected, 0);  // not while masked
    EXPECT_FALSE(vcpu_.window);    // and no interrupt window either
    EXPECT_EQ(vm_.ram[kPendingAt], 1);
    vm_.ram[kMaskAt] = 0;
  });
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0, 0, [&] {
    EXPECT_EQ(vcpu_.injected, 1);  // right after force_evtchn_callback
    EXPECT_EQ(vm_.ram[kPendingAt], 0);
  });
  EXPECT_EQ(Run().reason, StopReason::kGuestShutdown);
  EXPECT_EQ(vcpu_.injected, 1);
  EXPECT_EQ(stats_.timer_injections, 1u);
  EXPECT_EQ(signals_.Raised() & VmSignals::kInterrupt, 0u);
  EXPECT_EQ(stats_.causes[static_cast<int>(Cause::kIfSet)].exits, 1u);
  EXPECT_EQ(stats_.hc_exits[MVMM_HC_force_evtchn_callback], 1u);
  EXPECT_EQ(Reason(ExitReason::kIrqWindowOpen), 0u);
}

TEST_F(RunLoopTest, UnmaskedButNotReadyRequestsAWindowAndSetsNoPending) {
  Hypercall(MVMM_HC_vcpu_op, MVMM_VCPUOP_REGISTER_VCPU_INFO, 0, MVMM_VCPU_INFO_GPA, [&] {
    vcpu_.ready = false;  // inside an interrupt gate: IF=0, mask clear
  });
  vcpu_.script.push_back({Interrupted{}, {}, [&] { signals_.raised |= VmSignals::kInterrupt; }});
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0, 0, [&] {
    EXPECT_TRUE(vcpu_.window);
    EXPECT_EQ(vm_.ram[kPendingAt], 0);
  });
  EXPECT_EQ(Run().reason, StopReason::kGuestShutdown);
  EXPECT_EQ(vcpu_.injected, 0);
}

TEST_F(RunLoopTest, UnregisteredVcpuInfoIsIgnored) {
  vm_.ram[kMaskAt] = 1;  // the guest never registered it: not a mask
  signals_.raised = VmSignals::kInterrupt;
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  Run();
  EXPECT_EQ(vcpu_.injected, 1);
  EXPECT_EQ(vm_.ram[kPendingAt], 0);
}

TEST_F(RunLoopTest, StopRequestEndsTheRunBeforeTheNextEntry) {
  signals_.raised = VmSignals::kStop;
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  EXPECT_EQ(Run().reason, StopReason::kStopRequested);
  EXPECT_EQ(Reason(ExitReason::kIo), 0u);
}

TEST_F(RunLoopTest, TimeoutEndsTheRun) {
  signals_.raised = VmSignals::kTimeout;
  EXPECT_EQ(Run().reason, StopReason::kTimeout);
}

TEST_F(RunLoopTest, InterruptedExitIsCountedAndResumes) {
  Exit(Interrupted{});
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  EXPECT_EQ(Run().reason, StopReason::kGuestShutdown);
  EXPECT_EQ(Reason(ExitReason::kIntr), 1u);
}

TEST_F(RunLoopTest, HypercallFromRing3IsRefusedAndCounted) {
  vcpu_.state.cpl = 3;
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  Exit(Shutdown{});
  EXPECT_EQ(Run().reason, StopReason::kTripleFault);
  EXPECT_EQ(stats_.hc_refused_cpl3, 1u);
  EXPECT_EQ(static_cast<int64_t>(vcpu_.state.Get(Reg::kRax)), -MVMM_EPERM);
}

}  // namespace
}  // namespace minivmm

namespace minivmm {
namespace {

// A refused hypercall's reason reaches the observer, and the run's notes say
// it once per kind however often it happens.
TEST_F(RunLoopTest, RefusalsReachTheObserverAndAreNotedOncePerKind) {
  for (int i = 0; i < 3; ++i) Hypercall(MVMM_HC_set_if, 7);  // neither 0 nor 1
  Hypercall(MVMM_HC_sched_op, 99);                           // unknown command
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  std::vector<std::pair<int64_t, std::string>> refused;
  RunObserved([&](const ExitEvent& e) {
    if (e.result < 0) refused.emplace_back(e.result, std::string(e.refusal));
  });
  ASSERT_EQ(refused.size(), 4u);
  for (const auto& [result, why] : refused) {
    EXPECT_EQ(result, -MVMM_EINVAL);
    EXPECT_FALSE(why.empty());
  }
  EXPECT_EQ(refused[0].second, refused[2].second);
  EXPECT_NE(refused[0].second, refused[3].second);
  Hypercall(MVMM_HC_set_if, 7);
  Hypercall(MVMM_HC_set_if, 7);
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  Run();
  ASSERT_EQ(notes_.size(), 1u);
  EXPECT_NE(notes_[0].find("set_if"), std::string::npos) << notes_[0];
  EXPECT_EQ(stats_.hc_errors[MVMM_HC_set_if], 2u);
}

// Only a single 4-byte `out` is a hypercall; any other access to the port is
// an I/O exit of the hypercall device that does nothing.
TEST_F(RunLoopTest, OtherAccessesToTheHypercallPortAreIgnored) {
  vcpu_.state.Set(Reg::kRax, MVMM_HC_sched_op);
  vcpu_.state.Set(Reg::kRdi, MVMM_SCHEDOP_SHUTDOWN);
  std::vector<uint8_t> word(2), rep(8), in(4);
  Exit(IoOut{MVMM_HYPERCALL_PORT, 2, word});
  Exit(IoOut{MVMM_HYPERCALL_PORT, 4, rep});  // rep outsl, two elements
  Exit(IoIn{MVMM_HYPERCALL_PORT, 4, in});
  Exit(Shutdown{});
  EXPECT_EQ(Run().reason, StopReason::kTripleFault);
  EXPECT_EQ(stats_.hc_exits, decltype(stats_.hc_exits){});
  EXPECT_EQ(in, std::vector<uint8_t>(4, 0xff));
  EXPECT_EQ(Reason(ExitReason::kIo), 3u);
  EXPECT_EQ(stats_.pio_by_device[0], 4u);  // 1 + 2 elements + 1
}

// IPIs (send_ipi, flush_tlb_others): the vector, its count, its order
// behind nothing and before the timer's.
TEST_F(RunLoopTest, PendingIpiIsInjectedWithItsVectorAndCounted) {
  signals_.raised = VmSignals::kIpi;
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  Run();
  EXPECT_EQ(vcpu_.vectors, std::vector<uint32_t>{MVMM_IPI_VECTOR});
  EXPECT_EQ(stats_.ipi_injections, 1u);
  EXPECT_EQ(stats_.timer_injections, 0u);
  EXPECT_FALSE(vcpu_.window);
}

TEST_F(RunLoopTest, IpiGoesBeforeThePendingTimerWhichGetsAWindow) {
  signals_.raised = VmSignals::kIpi | VmSignals::kInterrupt;
  Exit(IrqWindowOpen{});  // the IPI handler's iretq
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0, 0, [&] {
    EXPECT_EQ(vcpu_.vectors, (std::vector<uint32_t>{MVMM_IPI_VECTOR, MVMM_TIMER_VECTOR}));
  });
  Run();
  EXPECT_EQ(stats_.ipi_injections, 1u);
  EXPECT_EQ(stats_.timer_injections, 1u);
  EXPECT_EQ(Reason(ExitReason::kIrqWindowOpen), 1u);
}

// send_ipi to itself: the IPI is there at the next entry, with no kick (no
// `intr` exit); a second one sent before it was taken merges with it.
TEST_F(RunLoopTest, SendIpiToItselfIsInjectedAtTheNextEntryAndMerges) {
  vcpu_.state.Set(Reg::kRflags, 0x2);  // IF off: the first stays pending
  Hypercall(MVMM_HC_send_ipi, 1, MVMM_IPI_VECTOR, 0, [&] { vcpu_.ready = false; });
  Hypercall(MVMM_HC_send_ipi, 1, MVMM_IPI_VECTOR, 0, [&] { EXPECT_EQ(vcpu_.injected, 0); });
  Hypercall(MVMM_HC_set_if, 1, 0, 0, [&] {
    EXPECT_TRUE(vcpu_.window);
    vcpu_.ready = true;
  });
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  EXPECT_EQ(Run().reason, StopReason::kGuestShutdown);
  EXPECT_EQ(vcpu_.vectors, std::vector<uint32_t>{MVMM_IPI_VECTOR});  // two sent, one taken
  EXPECT_EQ(stats_.causes[static_cast<int>(Cause::kIpi)].ops, 2u);
  EXPECT_EQ(stats_.ipi_injections, 1u);
  EXPECT_EQ(Reason(ExitReason::kIntr), 0u);
}

// A block on the only vCPU with an IPI pending returns at once: not halted
// forever, even with no timer.
TEST_F(RunLoopTest, BlockWithAnIpiPendingReturnsAndTheIpiIsTaken) {
  vcpu_.state.Set(Reg::kRflags, 0x202);
  Hypercall(MVMM_HC_send_ipi, 1, MVMM_IPI_VECTOR, 0, [&] { vcpu_.ready = false; });
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_BLOCK, 0, 0, [&] { vcpu_.ready = true; });
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  EXPECT_EQ(Run(/*timer_can_fire=*/false).reason, StopReason::kGuestShutdown);
  EXPECT_EQ(stats_.ipi_injections, 1u);
}

// The halting rule with several vCPUs (VmCpus): a vCPU that blocks while
// another is awake sleeps; the last one to sleep with nothing that can wake
// any of them stops the run, and names itself.
TEST(VmCpusTest, NothingCanWakeAnyOnlyWhenEveryVcpuSleepsWithNothingPending) {
  VmSignals s0, s1;
  VmCpus cpus({&s0, &s1});
  EXPECT_FALSE(cpus.NothingCanWakeAny(VcpuZeroTimer(false)));
  cpus.SetSleep(1, VmCpus::Sleep::kBlocked);
  EXPECT_FALSE(cpus.NothingCanWakeAny(VcpuZeroTimer(false)));  // vCPU 0 is awake
  EXPECT_TRUE(cpus.Blocked(1));
  EXPECT_FALSE(cpus.Blocked(0));
  cpus.SetSleep(0, VmCpus::Sleep::kBlocked);
  EXPECT_TRUE(cpus.NothingCanWakeAny(VcpuZeroTimer(false)));
  EXPECT_FALSE(cpus.NothingCanWakeAny(VcpuZeroTimer(true)));  // vCPU 0's own timer
  s1.raised = VmSignals::kIpi;
  EXPECT_FALSE(cpus.NothingCanWakeAny(VcpuZeroTimer(false)));  // vCPU 1 is about to wake
  cpus.SetSleep(1, VmCpus::Sleep::kHalted);  // HLT with IF=0: the IPI cannot end it
  EXPECT_TRUE(cpus.NothingCanWakeAny(VcpuZeroTimer(false)));
  cpus.SetSleep(0, VmCpus::Sleep::kHalted);
  EXPECT_TRUE(cpus.NothingCanWakeAny(VcpuZeroTimer(true)));  // not even its timer ends vCPU 0's HLT
}

TEST(VmCpusTest, SendIpiRaisesTheBitAndMergesWithOnePending) {
  VmSignals s0, s1;
  VmCpus cpus({&s0, &s1});
  cpus.SendIpi(0, 1);
  cpus.SendIpi(1, 1);
  EXPECT_EQ(s1.Raised(), VmSignals::kIpi);
  EXPECT_EQ(s0.Raised(), 0u);
  RunControl control;
  control.runstate_gpa = 0x5000;
  EXPECT_EQ(cpus.RunstateGpa(1), std::nullopt);
  cpus.Attach(1, &control);
  EXPECT_EQ(cpus.RunstateGpa(1), std::optional<uint64_t>(0x5000));
  EXPECT_EQ(cpus.count(), 2u);
}

// Each blocked vCPU's own timers count, and only its own: vCPU 0's timer
// cannot wake a blocked vCPU 1.
TEST(VmCpusTest, ABlockedVcpusOwnTimerCanWakeIt) {
  VmSignals s0, s1;
  VmCpus cpus({&s0, &s1});
  cpus.SetSleep(0, VmCpus::Sleep::kHalted);
  cpus.SetSleep(1, VmCpus::Sleep::kBlocked);
  EXPECT_TRUE(cpus.NothingCanWakeAny(nullptr));
  EXPECT_TRUE(cpus.NothingCanWakeAny(VcpuZeroTimer(true)));
  EXPECT_FALSE(cpus.NothingCanWakeAny([](uint32_t cpu) { return cpu == 1; }));
  cpus.SetSleep(0, VmCpus::Sleep::kBlocked);
  EXPECT_FALSE(cpus.NothingCanWakeAny(VcpuZeroTimer(true)));
  s1.raised.fetch_or(VmSignals::kInterrupt);
  EXPECT_FALSE(cpus.NothingCanWakeAny(nullptr));
}

TEST_F(RunLoopTest, LastVcpuToBlockWithNothingToWakeAnyStopsTheRun) {
  VmSignals other;
  VmCpus cpus({&other, &signals_});
  cpus.SetSleep(0, VmCpus::Sleep::kHalted);  // vCPU 0 halted with IF=0
  vcpu_.state.Set(Reg::kRflags, 0x202);
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_BLOCK);
  RunStop stop = RunAs(1, nullptr, /*timer_can_fire=*/true, &cpus);
  EXPECT_EQ(stop.reason, StopReason::kHaltedForever);
  EXPECT_NE(stop.detail.find("every vCPU is blocked or halted"), std::string::npos) << stop.detail;
  EXPECT_NE(stop.detail.find("vCPU 1 last: the guest blocked"), std::string::npos) << stop.detail;
  EXPECT_FALSE(cpus.Blocked(1));
}

// A vCPU blocked while another runs: the other's flush_tlb_others would see
// it blocked (under the big lock) and defer; its send_ipi wakes it, and the
// woken vCPU takes the IPI at its next entry with no `intr` exit.
TEST_F(RunLoopTest, BlockedVcpuIsSeenBlockedAndWokenByAnIpi) {
  constexpr uint64_t kRunstate = 0x5000;
  std::mutex big_lock;
  VmSignals other;
  VmCpus cpus({&other, &signals_});
  vcpu_.state.Set(Reg::kRflags, 0x202);
  Hypercall(MVMM_HC_vcpu_op, MVMM_VCPUOP_REGISTER_RUNSTATE_AREA, 1, kRunstate);
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_BLOCK);
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0, 0, [&] {
    EXPECT_EQ(vcpu_.vectors, std::vector<uint32_t>{MVMM_IPI_VECTOR});
    EXPECT_EQ(Runstate(kRunstate), MVMM_RUNSTATE_RUNNING);
  });
  bool seen_blocked = false;
  std::thread cpu0([&] {
    while (Runstate(kRunstate) != MVMM_RUNSTATE_BLOCKED) std::this_thread::yield();
    std::lock_guard lock(big_lock);
    seen_blocked = cpus.Blocked(1);
    cpus.SendIpi(0, 1);
  });
  RunStop stop = RunAs(1, &big_lock, false, &cpus);
  cpu0.join();
  EXPECT_TRUE(seen_blocked);
  EXPECT_EQ(stop.reason, StopReason::kGuestShutdown);
  EXPECT_EQ(stats_.ipi_injections, 1u);
  EXPECT_EQ(Reason(ExitReason::kIntr), 0u);
  EXPECT_FALSE(idle_at_stop_);
}

// lock_wait's outcome (docs/hypercalls.md): the handler has found the word
// unchanged; the run loop consumes a pending kick, returns at once for a
// pending interrupt, or sleeps (run state BLOCKED) until a kick or an
// interrupt, and writes the outcome into RAX.
TEST_F(RunLoopTest, LockWaitConsumesAPendingKickAtOnce) {
  signals_.lock_kicked = true;
  Hypercall(MVMM_HC_lock_wait, 0x5000, 0);
  Hypercall(MVMM_HC_lock_wait, 0x5000, 1, 0, [&] {
    EXPECT_EQ(vcpu_.state.Get(Reg::kRax), uint64_t{MVMM_LOCK_WAIT_KICKED});
    EXPECT_FALSE(signals_.lock_kicked);  // consumed
  });
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0, 0, [&] {
    EXPECT_EQ(vcpu_.state.Get(Reg::kRax), uint64_t{MVMM_LOCK_WAIT_CHANGED});  // word is 0, not 1
  });
  EXPECT_EQ(Run().reason, StopReason::kGuestShutdown);
  EXPECT_EQ(stats_.lock_wakes_by_kick, 1u);
  EXPECT_EQ(stats_.lock_waits_slept, 0u);
  EXPECT_EQ(stats_.causes[static_cast<int>(Cause::kLockWait)].ops, 2u);
  EXPECT_EQ(stats_.causes[static_cast<int>(Cause::kLockWait)].exits, 2u);
}

// docs/hypercalls.md: a kick is kept until a lock_wait reaches the run loop
// (word unchanged); one that returned CHANGED or was refused leaves it.
TEST_F(RunLoopTest, AKickOutlivesLockWaitsThatReturnedChangedOrWereRefused) {
  signals_.lock_kicked = true;
  Hypercall(MVMM_HC_lock_wait, 0x5000, 1);  // the word is 0: CHANGED
  Hypercall(MVMM_HC_lock_wait, 0x5002, 0, 0, [&] {
    EXPECT_EQ(vcpu_.state.Get(Reg::kRax), uint64_t{MVMM_LOCK_WAIT_CHANGED});
    EXPECT_TRUE(signals_.lock_kicked);
  });  // misaligned: refused
  Hypercall(MVMM_HC_lock_wait, 0x5000, 0, 0, [&] {
    EXPECT_EQ(vcpu_.state.Get(Reg::kRax), static_cast<uint64_t>(-int64_t{MVMM_EINVAL}));
    EXPECT_TRUE(signals_.lock_kicked);
  });  // unchanged: the kept kick, at once
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0, 0, [&] {
    EXPECT_EQ(vcpu_.state.Get(Reg::kRax), uint64_t{MVMM_LOCK_WAIT_KICKED});
    EXPECT_FALSE(signals_.lock_kicked);
  });
  EXPECT_EQ(Run().reason, StopReason::kGuestShutdown);
  EXPECT_EQ(stats_.lock_wakes_by_kick, 1u);
  EXPECT_EQ(stats_.lock_waits_slept, 0u);
}

TEST_F(RunLoopTest, LockWaitWithAnInterruptPendingReturnsAtOnce) {
  vcpu_.ready = false;  // IF off: the timer's interrupt stays pending
  signals_.raised = VmSignals::kInterrupt;
  Hypercall(MVMM_HC_lock_wait, 0x5000, 0);
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0, 0,
            [&] { EXPECT_EQ(vcpu_.state.Get(Reg::kRax), uint64_t{MVMM_LOCK_WAIT_INTERRUPT}); });
  EXPECT_EQ(Run().reason, StopReason::kGuestShutdown);
  EXPECT_EQ(stats_.lock_waits_slept, 0u);
  EXPECT_EQ(stats_.lock_wakes_by_kick, 0u);
}

TEST_F(RunLoopTest, LockWaitOnTheOnlyVcpuWithNothingToWakeItStopsTheRun) {
  Hypercall(MVMM_HC_lock_wait, 0x5000, 0);
  const RunStop stop = Run(/*timer_can_fire=*/false);
  EXPECT_EQ(stop.reason, StopReason::kHaltedForever);
  EXPECT_EQ(stop.detail, "the guest waited in lock_wait with no kick or timer to come");
  EXPECT_EQ(stats_.lock_waits_slept, 1u);
}

// vCPU 1 (this loop) registers a run-state area and waits in lock_wait on
// a word that holds 0, then asks to shut down after `check` (its RAX is the
// wait's outcome). Another thread, standing for vCPU 0, waits until the
// area says BLOCKED and then runs `wake` (under the big lock, if any).
class LockWaitTest : public RunLoopTest {
 protected:
  static constexpr uint64_t kRunstate = 0x6000;

  RunStop WaitThenWake(std::mutex* big_lock, std::function<void()> check,
                       std::function<void()> wake) {
    Hypercall(MVMM_HC_vcpu_op, MVMM_VCPUOP_REGISTER_RUNSTATE_AREA, 1, kRunstate);
    Hypercall(MVMM_HC_lock_wait, 0x5000, 0);
    Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0, 0, std::move(check));
    std::thread cpu0([&] {
      while (Runstate(kRunstate) != MVMM_RUNSTATE_BLOCKED) std::this_thread::yield();
      std::optional<std::lock_guard<std::mutex>> lock;
      if (big_lock != nullptr) lock.emplace(*big_lock);
      wake();
    });
    RunStop stop = RunAs(1, big_lock, false, &cpus_);
    cpu0.join();
    return stop;
  }
  uint64_t Rax() const { return vcpu_.state.Get(Reg::kRax); }

  VmSignals other_;
  VmCpus cpus_{{&other_, &signals_}};
};

// vCPU 0 sees the sleeping vCPU 1 blocked under the big lock and kicks it;
// the wait returns KICKED with the run state back to RUNNING.
TEST_F(LockWaitTest, SleepsUntilKicked) {
  std::mutex big_lock;
  vcpu_.state.Set(Reg::kRflags, 0x202);
  bool seen_blocked = false;
  const RunStop stop = WaitThenWake(
      &big_lock,
      [&] {
        EXPECT_EQ(Rax(), uint64_t{MVMM_LOCK_WAIT_KICKED});
        EXPECT_EQ(Runstate(kRunstate), MVMM_RUNSTATE_RUNNING);
      },
      [&] {
        seen_blocked = cpus_.Blocked(1);
        EXPECT_FALSE(cpus_.NothingCanWakeAny(VcpuZeroTimer(false)));  // vCPU 0 is awake
        cpus_.LockKick(0, 1);
      });
  EXPECT_TRUE(seen_blocked);
  EXPECT_EQ(stop.reason, StopReason::kGuestShutdown);
  EXPECT_EQ(stats_.lock_waits_slept, 1u);
  EXPECT_EQ(stats_.lock_wakes_by_kick, 1u);
  EXPECT_EQ(stats_.ipi_injections, 0u);  // a kick is no interrupt
  EXPECT_FALSE(other_.lock_kicked);
}

TEST_F(LockWaitTest, IsEndedByAnIpiWithoutAKick) {
  std::mutex big_lock;
  vcpu_.state.Set(Reg::kRflags, 0x202);
  const RunStop stop = WaitThenWake(
      &big_lock, [&] { EXPECT_EQ(Rax(), uint64_t{MVMM_LOCK_WAIT_INTERRUPT}); },
      [&] { cpus_.SendIpi(0, 1); });
  EXPECT_EQ(stop.reason, StopReason::kGuestShutdown);
  EXPECT_EQ(stats_.lock_waits_slept, 1u);
  EXPECT_EQ(stats_.lock_wakes_by_kick, 0u);
  EXPECT_EQ(stats_.ipi_injections, 1u);
}

// A stop request (as from a signal handler: no lock, no notify) ends a wait.
TEST_F(LockWaitTest, StopsPromptlyWhenTheVmStops) {
  const RunStop stop = WaitThenWake(nullptr, nullptr, [&] { signals_.RequestStop(); });
  EXPECT_EQ(stop.reason, StopReason::kStopRequested);
  EXPECT_TRUE(idle_at_stop_);
  EXPECT_EQ(stats_.lock_wakes_by_kick, 0u);
}

TEST(VmCpusTest, AVcpuInLockWaitCanBeWokenByAKickOrAnInterrupt) {
  VmSignals s0, s1;
  VmCpus cpus({&s0, &s1});
  cpus.SetSleep(0, VmCpus::Sleep::kBlocked);
  cpus.SetSleep(1, VmCpus::Sleep::kLockWait);
  EXPECT_TRUE(cpus.Blocked(1));
  EXPECT_TRUE(cpus.NothingCanWakeAny(VcpuZeroTimer(false)));
  cpus.LockKick(0, 1);
  EXPECT_TRUE(s1.lock_kicked);
  EXPECT_FALSE(s0.lock_kicked);
  EXPECT_EQ(s1.Raised(), 0u);  // no interrupt
  EXPECT_FALSE(cpus.NothingCanWakeAny(VcpuZeroTimer(false)));
  EXPECT_TRUE(s1.TakeLockKick());
  EXPECT_TRUE(cpus.NothingCanWakeAny(VcpuZeroTimer(false)));
  s1.raised = VmSignals::kIpi;
  EXPECT_FALSE(cpus.NothingCanWakeAny(VcpuZeroTimer(false)));
  // A kick to a vCPU blocked in sched_op(block) does not wake it.
  s1.raised = 0;
  cpus.SetSleep(1, VmCpus::Sleep::kBlocked);
  cpus.LockKick(0, 1);
  EXPECT_TRUE(cpus.NothingCanWakeAny(VcpuZeroTimer(false)));
}

// The readiness rule (vmm/core/interrupt_rule.h) in the loop, with the
// scripted vCPU giving its inputs as KvmVcpu does (model_kvm): the cases
// that must never inject.

// set_if(0) cleared IF in the synced registers while a tick was raised: KVM's
// ready flag and if_flag still say 1 (IF was 1 at the `out`), but the guest
// resumes with IF=0, inside its critical section. No injection until its
// set_if(1), which takes the tick at once.
TEST_F(RunLoopTest, ReadinessRuleSetIfZeroNeverInjectsOnKvmsStaleFlags) {
  vcpu_.model_kvm = true;
  vcpu_.state.Set(Reg::kRflags, 0x202);
  Hypercall(MVMM_HC_set_if, 0, 0, 0, [&] {
    vcpu_.ready = vcpu_.if_flag = true;  // KVM at this exit: IF was 1
    signals_.raised |= VmSignals::kInterrupt;
  });
  Hypercall(MVMM_HC_set_if, 1, 0, 0, [&] {
    EXPECT_EQ(vcpu_.injected, 0);  // not into IF=0
    EXPECT_TRUE(vcpu_.window);
    vcpu_.ready = vcpu_.if_flag = false;  // KVM at this exit: IF was 0
  });
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0, 0, [&] {
    EXPECT_EQ(vcpu_.vectors, std::vector<uint32_t>{MVMM_TIMER_VECTOR});  // right after set_if(1)
  });
  EXPECT_EQ(Run().reason, StopReason::kGuestShutdown);
  EXPECT_EQ(stats_.timer_injections, 1u);
  EXPECT_EQ(Reason(ExitReason::kIrqWindowOpen), 0u);
}

// A KVM_RUN that returned without KVM writing its flags (kvm_flags_current
// false): they say ready, from an older state, and must not be believed;
// a window instead, and the injection at the window's exit.
TEST_F(RunLoopTest, ReadinessRuleFlagsNotWrittenByTheLastRunOnlyRequestAWindow) {
  vcpu_.model_kvm = true;
  vcpu_.state.Set(Reg::kRflags, 0x202);
  vcpu_.script.push_back({Interrupted{}, {}, [&] {
                            vcpu_.ready = vcpu_.if_flag = true;
                            vcpu_.flags_current = false;
                            signals_.raised |= VmSignals::kIpi;
                          }});
  vcpu_.script.push_back({IrqWindowOpen{}, {}, [&] {
                            EXPECT_EQ(vcpu_.injected, 0);
                            EXPECT_TRUE(vcpu_.window);
                            vcpu_.flags_current = true;
                          }});
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0, 0, [&] {
    EXPECT_EQ(vcpu_.vectors, std::vector<uint32_t>{MVMM_IPI_VECTOR});
  });
  EXPECT_EQ(Run().reason, StopReason::kGuestShutdown);
  EXPECT_EQ(stats_.ipi_injections, 1u);
}

// if_flag says 1 but KVM's ready flag does not (an interrupt shadow, or an
// event of KVM's own still to deliver) after a kick: a window, no injection.
TEST_F(RunLoopTest, ReadinessRuleIfFlagWithoutKvmsReadyFlagNeverInjects) {
  vcpu_.model_kvm = true;
  vcpu_.state.Set(Reg::kRflags, 0x202);
  vcpu_.script.push_back({Interrupted{}, {}, [&] {
                            vcpu_.ready = false;
                            vcpu_.if_flag = true;
                            signals_.raised |= VmSignals::kInterrupt;
                          }});
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0, 0, [&] {
    EXPECT_EQ(vcpu_.injected, 0);
    EXPECT_TRUE(vcpu_.window);
  });
  EXPECT_EQ(Run().reason, StopReason::kGuestShutdown);
  EXPECT_EQ(stats_.timer_injections, 0u);
}

// The identity check at each hypercall exit (a build without NDEBUG): the
// GDT base and TR the VMM gave the vCPU.
TEST_F(RunLoopTest, IdentityCheckCountsAHypercallOnAnotherGdt) {
#ifdef NDEBUG
  GTEST_SKIP() << "the identity check is compiled in without NDEBUG only";
#endif
  const VcpuIdentity given = BootIdentity(0);
  Hypercall(MVMM_HC_set_if, 1, 0, 0, [&] { vcpu_.identity.gdt_base = given.gdt_base + 0x80; });
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0, 0, [&] { vcpu_.identity = given; });
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunCheckingIdentity(given).reason, StopReason::kGuestShutdown);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(stats_.identity_mismatches, 1u);
  EXPECT_NE(err.find("GDT base 0xc0000080"), std::string::npos) << err;
  EXPECT_NE(err.find("gave it GDT base 0xc0000000, TR 0x28 base"), std::string::npos) << err;
}

TEST_F(RunLoopTest, IdentityCheckReportsOnceAndCountsEachExit) {
#ifdef NDEBUG
  GTEST_SKIP() << "the identity check is compiled in without NDEBUG only";
#endif
  vcpu_.identity = BootIdentity(1);  // vCPU 1's TSS on vCPU 0
  Hypercall(MVMM_HC_set_if, 1);
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  ::testing::internal::CaptureStderr();
  RunCheckingIdentity(BootIdentity(0));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(stats_.identity_mismatches, 2u);
  EXPECT_EQ(err.find("minivmm:"), err.rfind("minivmm:")) << err;
}

TEST_F(RunLoopTest, IdentityCheckFindsNothingOnTheVcpusOwnGdtAndTss) {
  Hypercall(MVMM_HC_set_if, 1);
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  EXPECT_EQ(RunCheckingIdentity(BootIdentity(0)).reason, StopReason::kGuestShutdown);
  EXPECT_EQ(stats_.identity_mismatches, 0u);
}

// The ring of recent exits (RunLoopParts::recent_exits, docs/design.md
// "Recent exits"): the last N of every KVM_RUN return, oldest first, each
// with what the exit was and the registers it left.
TEST_F(RunLoopTest, RecentExitsAreTheLastNInOrderEndingWithTheStop) {
  for (uint64_t i = 0; i < 10; ++i) Hypercall(MVMM_HC_set_if, i & 1);
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 7);
  const std::vector<RecentExit> kept = RunKeepingRecent(4);
  ASSERT_EQ(kept.size(), 4u);
  for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(kept[i].sequence, 7 + i);
  EXPECT_EQ(kept.back().sequence + 1, stats_.by_reason[static_cast<int>(ExitReason::kIo)]);
  EXPECT_TRUE(kept.back().hypercall);
  EXPECT_EQ(kept.back().rax, MVMM_HC_sched_op);
  EXPECT_EQ(kept.back().rdi, MVMM_SCHEDOP_SHUTDOWN);
  EXPECT_EQ(kept.back().rsi, 7u);
  EXPECT_EQ(kept[2].rax, MVMM_HC_set_if);
  EXPECT_EQ(kept[2].rdi, 1u);  // the tenth set_if: i = 9
  EXPECT_EQ(kept[1].rdi, 0u);
}

TEST_F(RunLoopTest, RecentExitsShorterThanTheRingKeepEveryExit) {
  Hypercall(MVMM_HC_set_if, 1);
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  const std::vector<RecentExit> kept = RunKeepingRecent(16);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].sequence, 0u);
  EXPECT_EQ(kept[1].sequence, 1u);
}

// Each kind of exit keeps its own detail: a port or MMIO access its
// address, size and written bytes, a failed KVM_RUN its errno; and the
// registers as the exit left them.
TEST_F(RunLoopTest, RecentExitsKeepEachKindsDetailAndTheRegisters) {
  const std::vector<uint8_t> byte{0x41};
  const std::vector<uint8_t> word{0x78, 0x56, 0x34, 0x12};
  std::vector<uint8_t> in(1);
  std::vector<uint8_t> read(4);
  vcpu_.script.push_back({IoOut{MVMM_COM1_PORT, 1, byte}, {{Reg::kRip, 0x1000}}});
  vcpu_.script.push_back({IoIn{MVMM_COM1_PORT + 5, 1, in}, {{Reg::kRip, 0x1004}}});
  vcpu_.script.push_back({MmioWrite{0xd0000000, word}, {{Reg::kRip, 0x1008}}});
  vcpu_.script.push_back({MmioRead{0xd0000010, read}, {{Reg::kRflags, 0x202}}});
  Exit(IrqWindowOpen{});
  Exit(Interrupted{});
  // Then the script runs out: KVM_RUN fails with EIO, a VMM error.
  RunStop stop;
  const std::vector<RecentExit> kept = RunKeepingRecent(16, &stop);
  EXPECT_EQ(stop.reason, StopReason::kVmmError);
  ASSERT_EQ(kept.size(), 7u);
  EXPECT_EQ(kept[0].reason, ExitReason::kIo);
  EXPECT_FALSE(kept[0].hypercall);
  EXPECT_TRUE(kept[0].write);
  EXPECT_EQ(kept[0].address, MVMM_COM1_PORT);
  EXPECT_EQ(kept[0].size, 1u);
  EXPECT_EQ(kept[0].detail, 0x41u);
  EXPECT_EQ(kept[0].rip, 0x1000u);
  EXPECT_FALSE(kept[1].write);
  EXPECT_EQ(kept[1].address, MVMM_COM1_PORT + 5);
  EXPECT_EQ(kept[1].detail, 0u);
  EXPECT_EQ(kept[2].reason, ExitReason::kMmio);
  EXPECT_TRUE(kept[2].write);
  EXPECT_EQ(kept[2].address, 0xd0000000u);
  EXPECT_EQ(kept[2].size, 4u);
  EXPECT_EQ(kept[2].detail, 0x12345678u);
  EXPECT_EQ(kept[2].rip, 0x1008u);
  EXPECT_FALSE(kept[3].write);
  EXPECT_EQ(kept[3].rflags, 0x202u);
  EXPECT_EQ(kept[4].reason, ExitReason::kIrqWindowOpen);
  EXPECT_EQ(kept[5].reason, ExitReason::kIntr);
  EXPECT_EQ(kept[6].reason, ExitReason::kCount);  // KVM_RUN failed
  EXPECT_EQ(kept[6].detail, static_cast<uint64_t>(EIO));
  EXPECT_EQ(kept[6].sequence, 6u);
}

// The vector injected before an entry is noted with the exit that ends it,
// and with no other.
TEST_F(RunLoopTest, RecentExitsNoteTheVectorInjectedBeforeTheirEntry) {
  signals_.raised = VmSignals::kIpi;
  Hypercall(MVMM_HC_set_if, 1);
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  const std::vector<RecentExit> kept = RunKeepingRecent(16);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].injected_vector, MVMM_IPI_VECTOR);
  EXPECT_EQ(kept[1].injected_vector, 0u);
}

TEST_F(RunLoopTest, NoRecentExitsUnlessAsked) {
  Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, 0);
  EXPECT_TRUE(RunKeepingRecent(0).empty());
}

TEST(RecentExitTest, DescribedWithTheHypercallsNameOrTheAccess) {
  std::vector<std::string> names(MVMM_HC_MAX);
  names[MVMM_HC_sched_op] = "sched_op";
  RecentExit hc{.sequence = 41, .reason = ExitReason::kIo, .hypercall = true, .write = true,
                .size = 4, .address = MVMM_HYPERCALL_PORT, .rip = 0xffff0010, .rflags = 0x2,
                .rax = MVMM_HC_sched_op, .rdi = MVMM_SCHEDOP_SHUTDOWN, .rsi = 4};
  EXPECT_EQ(DescribeRecentExit(hc, names),
            "#41 hypercall sched_op rdi=0x2 rsi=0x4 rip=0xffff0010 rflags=0x2 cpl=0");
  hc.rax = MVMM_HC_MAX + 3;
  EXPECT_EQ(DescribeRecentExit(hc, names),
            "#41 hypercall " + std::to_string(MVMM_HC_MAX + 3) +
                " rdi=0x2 rsi=0x4 rip=0xffff0010 rflags=0x2 cpl=0");
  RecentExit out{.sequence = 2, .reason = ExitReason::kIo, .write = true, .size = 1,
                 .injected_vector = MVMM_TIMER_VECTOR, .address = 0x3f8, .detail = 0x41};
  EXPECT_EQ(DescribeRecentExit(out, names),
            "#2 io out port 0x3f8 size 1 data=0x41 rip=0x0 rflags=0x0 cpl=0 (entered with "
            "vector 0x20 injected)");
  RecentExit mmio{.reason = ExitReason::kMmio, .size = 4, .address = 0xd0000010};
  EXPECT_EQ(DescribeRecentExit(mmio, names), "#0 mmio read 0xd0000010 size 4 rip=0x0 rflags=0x0 cpl=0");
  RecentExit failed{.sequence = 9, .detail = EIO};
  EXPECT_EQ(DescribeRecentExit(failed, names), "#9 KVM_RUN failed errno=5 rip=0x0 rflags=0x0 cpl=0");
}

}  // namespace
}  // namespace minivmm
