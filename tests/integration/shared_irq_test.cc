// The shared-memory interrupt flag (pvops irq:shared, and the `xen` preset):
// the guest's irq ops only read and write evtchn_upcall_mask, so the only
// IF exits left are the force_evtchn_callback calls of unmasks that found an
// event pending. Exact against the guest's own counters, timer off and on
// (how many unmasks find an event pending depends on when ticks land; that
// the VMM's IF-set exits equal the guest's count of them does not).
// Formulas: docs/exit-model.md "The shared-memory interrupt flag".
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "minivmm_abi/hypercall.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
namespace {

const CauseCount& CauseOf(const GuestRun& run, Cause cause) {
  return run.result.stats.causes[static_cast<int>(cause)];
}

uint64_t WindowExits(const GuestRun& run) {
  return run.result.stats.by_reason[static_cast<int>(ExitReason::kIrqWindowOpen)];
}

struct SharedCase {
  std::string workload;
  std::string pvops;
  uint32_t timer_hz;
};

std::string Name(const SharedCase& c) {
  std::string s = c.workload + "_" + c.pvops + "_hz" + std::to_string(c.timer_hz);
  for (char& ch : s)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

void PrintTo(const SharedCase& c, std::ostream* os) { *os << Name(c); }

class SharedIrqTest : public ::testing::TestWithParam<SharedCase> {};

TEST_P(SharedIrqTest, IfExitsAreExactlyTheUnmasksThatFoundAnEventPending) {
  REQUIRE_KVM();
  const SharedCase& c = GetParam();
  GuestRun run = RunGuest(BuiltinGuest(), "backend=pv pvops=" + c.pvops + " workload=" + c.workload,
                          absl::Seconds(60), c.timer_hz);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  ASSERT_EQ(run.result.exit_code, 0) << run.console;
  EXPECT_EQ(run.Report("check.failed"), 0u);
  EXPECT_GT(run.Report("check.passed"), 0u);
  ASSERT_EQ(run.reports["config.pvops.irq"], "shared");

  // Per hypercall, VMM against guest, as in every pv run.
#define MVMM_TEST_HC_(nr, name)                                                     \
  EXPECT_EQ(run.HypercallOps(nr), run.Report("kernel.hc." #name)) << #name;         \
  EXPECT_EQ(run.HypercallExits(nr), run.Report("kernel.hc_exits." #name)) << #name; \
  EXPECT_EQ(run.result.stats.hc_errors[nr], run.Report("kernel.hc_errors." #name)) << #name;
  MVMM_HYPERCALL_LIST(MVMM_TEST_HC_)
#undef MVMM_TEST_HC_
  EXPECT_EQ(run.result.stats.hc_bad_number, 0u);

  // One registration at boot; no set_if at all.
  EXPECT_EQ(run.HypercallExits(MVMM_HC_vcpu_op), 1u);
  EXPECT_EQ(run.HypercallOps(MVMM_HC_set_if), 0u);
  EXPECT_EQ(CauseOf(run, Cause::kIfClear).ops, 0u);
  EXPECT_EQ(CauseOf(run, Cause::kIfClear).exits, 0u);

  // Every place the kernel turns interrupts on clears the mask...
  EXPECT_EQ(run.Report("kernel.irq_unmasks"), run.Report("kernel.irq_enables") +
                                                  run.Report("kernel.idle_blocks") +
                                                  run.Report("kernel.irq_restores_if_set"));
  // ...and exactly the ones that found an event pending exit: IF set, besides
  // the interrupt-window exits of ticks that came while a gate had IF=0.
  const uint64_t pending = run.Report("kernel.irq_unmasks_pending");
  EXPECT_EQ(run.HypercallExits(MVMM_HC_force_evtchn_callback), pending);
  EXPECT_EQ(run.HypercallOps(MVMM_HC_force_evtchn_callback), pending);
  EXPECT_EQ(CauseOf(run, Cause::kIfSet).exits, pending + WindowExits(run));
  EXPECT_EQ(CauseOf(run, Cause::kIfSet).ops, pending + WindowExits(run));
  // The guest counts irq_unmasks_pending in the unmask, just before its
  // force_evtchn_callback, so the two lines above are one code path seen
  // from both sides. What the workload's parameters bound, with the timer
  // off: the only interrupts are irq,pending=1's one-shots (set_timer_op,
  // one per loop), each fires once, and the VMM marks evtchn_upcall_pending
  // only for an interrupt it holds back and clears it only when it injects
  // that interrupt; so each unmask that found an event pending was one
  // injection, and there are at most as many as the loops armed. (With the
  // timer on, an unmask inside an interrupt gate can find the same held-back
  // tick pending twice before the gate's iretq lets it in: no bound.)
  if (c.timer_hz == 0) {
    const bool one_shots = c.workload.find("pending=1") != std::string::npos;
    const uint64_t armed = one_shots ? 30 : 0;  // loops=30 in Cases()
    EXPECT_EQ(run.HypercallOps(MVMM_HC_set_timer_op), armed);
    EXPECT_LE(run.result.stats.timer_injections, armed);
    EXPECT_LE(pending, run.result.stats.timer_injections);
  }

  // Every interrupt the VMM injected was taken exactly once, none while
  // masked (the guest would have counted a tick inside an irqsave section:
  // its spinlocks assert interrupts are off while held).
  EXPECT_EQ(run.result.stats.timer_injections, run.Report("kernel.timer_irqs"));
  if (c.timer_hz == 0 && c.workload.find("pending=1") == std::string::npos) {
    // No interrupt ever: nothing can be pending, nothing waits for a window.
    EXPECT_EQ(run.Report("kernel.timer_irqs"), 0u);
    EXPECT_EQ(pending, 0u);
    EXPECT_EQ(WindowExits(run), 0u);
  }
}

std::vector<SharedCase> Cases() {
  std::vector<SharedCase> cases;
  for (const char* w : {"ctx", "pipe", "irq", "irq,pending=1,loops=30", "cpa", "fpu"})
    for (const char* p : {"xen", "xen,tls:optimized", "optimized,irq:shared"})
      for (uint32_t hz : {0u, 1000u}) cases.push_back({w, p, hz});
  cases.push_back({"ctx,preempt=1,rounds=10", "xen", 1000});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(All, SharedIrqTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return Name(info.param); });

// The irq workload under the shared flag against the hypercall model: the
// same kernel events, and of the 2 L d (naive) set_if exits only the unmasks
// that found an event pending are left.
TEST(SharedIrqTest, IrqWorkloadCostsOnlyPendingUnmasks) {
  REQUIRE_KVM();
  const std::string w = "irq,loops=20,depth=3,pending=1";
  GuestRun hypercall = RunGuest(BuiltinGuest(), "backend=pv pvops=naive workload=" + w);
  GuestRun shared = RunGuest(BuiltinGuest(), "backend=pv pvops=naive,irq:shared workload=" + w);
  ASSERT_EQ(hypercall.result.exit_code, 0) << hypercall.console;
  ASSERT_EQ(shared.result.exit_code, 0) << shared.console;
  for (const char* key : {"irq.irq_restores_if_set", "irq.irq_restores_if_clear",
                          "irq.irq_disables", "irq.irq_enables", "irq.restores"})
    EXPECT_EQ(hypercall.Report(key), shared.Report(key)) << key;
  EXPECT_EQ(hypercall.HypercallExits(MVMM_HC_set_if),
            hypercall.Report("kernel.irq_disables") + hypercall.Report("kernel.irq_enables") +
                hypercall.Report("kernel.idle_blocks") +
                hypercall.Report("kernel.irq_restores_if_set") +
                hypercall.Report("kernel.irq_restores_if_clear"));
  EXPECT_EQ(hypercall.Report("kernel.irq_unmasks"), 0u);
  EXPECT_EQ(shared.HypercallExits(MVMM_HC_set_if), 0u);
  EXPECT_EQ(shared.HypercallExits(MVMM_HC_force_evtchn_callback),
            shared.Report("kernel.irq_unmasks_pending"));
  EXPECT_EQ(shared.Report("irq.irq_unmasks"), shared.Report("irq.irq_restores_if_set"));
  EXPECT_EQ(shared.result.stats.timer_injections, shared.Report("kernel.timer_irqs"));
}

// With batching on (the xen preset), the TLS seed's saving is in multicall
// entries, not exits: the descriptors optimized leaves out were entries of
// the multicall every switch makes anyway.
TEST(SharedIrqTest, XenPresetTlsSavingIsMulticallEntriesNotExits) {
  REQUIRE_KVM();
  for (const char* tls : {"same", "one", "all"}) {
    SCOPED_TRACE(tls);
    const std::string w = std::string("ctx,tasks=3,rounds=10,tls=") + tls;
    GuestRun naive = RunGuest(BuiltinGuest(), "backend=pv pvops=xen workload=" + w);
    GuestRun opt = RunGuest(BuiltinGuest(), "backend=pv pvops=xen,tls:optimized workload=" + w);
    ASSERT_EQ(naive.result.exit_code, 0) << naive.console;
    ASSERT_EQ(opt.result.exit_code, 0) << opt.console;
    ASSERT_EQ(opt.reports["config.pvops.tls"], "optimized");
    const uint64_t saved = naive.Report("kernel.desc_updates") - opt.Report("kernel.desc_updates");
    EXPECT_EQ(naive.Report("kernel.desc_updates"), 3 * naive.Report("kernel.switches"));
    // No descriptor update is ever its own exit under batching.
    EXPECT_EQ(naive.HypercallExits(MVMM_HC_update_descriptor), 0u);
    EXPECT_EQ(opt.HypercallExits(MVMM_HC_update_descriptor), 0u);
    EXPECT_EQ(
        naive.HypercallOps(MVMM_HC_update_descriptor) - opt.HypercallOps(MVMM_HC_update_descriptor),
        saved);
    EXPECT_EQ(CauseOf(naive, Cause::kMulticall).ops - CauseOf(opt, Cause::kMulticall).ops, saved);
    // Every switch flushes a non-empty batch (stack_switch at least) either
    // way: the same multicall exits, the same exits in all.
    EXPECT_EQ(CauseOf(naive, Cause::kMulticall).exits, naive.Report("kernel.multicalls"));
    EXPECT_EQ(CauseOf(opt, Cause::kMulticall).exits, opt.Report("kernel.multicalls"));
    EXPECT_EQ(naive.Report("kernel.multicalls"), opt.Report("kernel.multicalls"));
    EXPECT_EQ(naive.result.stats.by_reason, opt.result.stats.by_reason);
  }
}

TEST(SharedIrqTest, NativeBackendRefusesTheSharedFlag) {
  REQUIRE_KVM();
  for (const char* pvops : {"xen", "naive,irq:shared"}) {
    GuestRun run =
        RunGuest(BuiltinGuest(), std::string("backend=native pvops=") + pvops + " workload=hello");
    EXPECT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail;
    EXPECT_EQ(run.result.exit_code, 2) << pvops;
    EXPECT_NE(run.console.find("pvops irq:shared (also in pvops=xen) needs backend=pv"),
              std::string::npos)
        << run.console;
  }
}

}  // namespace
}  // namespace minivmm::testing
