// Exact exit accounting for the paravirt ops: for every
// workload, backend and variant, the VMM's counts by hypercall and by cause
// must equal formulas in the guest's own counters. Two counts of the same
// calls, not independent ones: the VMM attributes exits itself; the guest
// counts what it issued, in the wrapper that makes the call (guest/pv), so
// a count that agrees shows no exit lost or misattributed, not that the
// kernel made the right calls; that is what the closed forms from workload
// parameters are for. The formulas and their reasoning are in
// docs/exit-model.md.
#include <optional>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "minivmm_abi/hypercall.h"
#include "tests/common/ctx_model.h"
#include "tests/common/fpu_model.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
namespace {

const char* const kHypercalls[] = {
#define MVMM_TEST_NAME_(nr, name) #name,
    MVMM_HYPERCALL_LIST(MVMM_TEST_NAME_)
#undef MVMM_TEST_NAME_
};

uint32_t Nr(const std::string& name) {
#define MVMM_TEST_NR_(nr, n) \
  if (name == #n) return nr;
  MVMM_HYPERCALL_LIST(MVMM_TEST_NR_)
#undef MVMM_TEST_NR_
  return 0;
}

const CauseCount& CauseOf(const GuestRun& run, Cause cause) {
  return run.result.stats.causes[static_cast<int>(cause)];
}

struct Case {
  std::string workload;
  std::string backend;
  std::string pvops;
};

std::string Name(const Case& c) {
  std::string s = c.workload + "_" + c.backend + "_" + c.pvops;
  for (char& ch : s)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

void PrintTo(const Case& c, std::ostream* os) { *os << Name(c); }

class PvopsMatrixTest : public ::testing::TestWithParam<Case> {};

TEST_P(PvopsMatrixTest, SelfChecksPassAndEveryCountMatchesTheGuest) {
  REQUIRE_KVM();
  const Case& c = GetParam();
  GuestRun run = RunGuest(BuiltinGuest(),
                          "backend=" + c.backend + " pvops=" + c.pvops + " workload=" + c.workload);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  ASSERT_EQ(run.result.exit_code, 0) << run.console;
  EXPECT_EQ(run.Report("check.failed"), 0u);
  EXPECT_GT(run.Report("check.passed"), 0u);

  // Per hypercall: the VMM's ops and exits are the guest's issued calls.
  for (const char* name : kHypercalls) {
    EXPECT_EQ(run.HypercallOps(Nr(name)), run.Report(std::string("kernel.hc.") + name)) << name;
    EXPECT_EQ(run.HypercallExits(Nr(name)), run.Report(std::string("kernel.hc_exits.") + name))
        << name;
  }
  // Nothing refused, nothing unknown: the guest only makes valid calls.
  EXPECT_EQ(run.result.stats.hc_bad_number, 0u);

  // Timer off: no interrupt windows, so IF-set exits are all hypercalls.
  EXPECT_EQ(run.result.stats.by_reason[static_cast<int>(ExitReason::kIrqWindowOpen)], 0u);
  const bool naive_restore = run.reports["config.pvops.irq_restore"] == "naive";
  // On both backends the guest's CR0 writes follow from its FPU events, and
  // the events from what the guest detected on this host
  // (tests/common/fpu_model.h): the only host-dependent counts.
  const FpuEvents events{run.Report("kernel.nm_traps"), run.Report("kernel.fpu_preloads"),
                         run.Report("kernel.fpu_owner_preloads"), run.Report("kernel.fpu_saves")};
  const std::string fpu_switch = run.reports["config.pvops.fpu_switch"];
  EXPECT_EQ(run.Report("kernel.cr0_writes"), Cr0Writes(fpu_switch, events));
  // The boot probe's share of them is a function of what it detected.
  const bool ring3_nm = run.Report("kernel.ring3_nm") != 0;
  if (c.workload == "ctx" || c.workload == "pipe") {
    // Default ring: fpu=all.
    EXPECT_EQ(events,
              BootProbeFpuEvents(ring3_nm) + RingFpuEvents(run.Report(c.workload + ".tasks"),
                                                           run.Report(c.workload + ".rounds"),
                                                           ring3_nm, fpu_switch == "eager"));
  } else if (c.workload != "fpu") {
    EXPECT_EQ(events, BootProbeFpuEvents(ring3_nm));
  }
  // The set_if model (irq:hypercall, the default): no vcpu_info, no mask.
  EXPECT_EQ(run.reports["config.pvops.irq"], "hypercall");
  EXPECT_EQ(run.Report("kernel.irq_unmasks"), 0u);
  EXPECT_EQ(run.HypercallOps(MVMM_HC_vcpu_op), 0u);
  EXPECT_EQ(run.HypercallOps(MVMM_HC_force_evtchn_callback), 0u);
  if (c.backend == "pv") {
    EXPECT_EQ(CauseOf(run, Cause::kIfSet).ops, run.Report("kernel.irq_enables") +
                                                   run.Report("kernel.idle_blocks") +
                                                   run.Report("kernel.irq_restores_if_set"));
    EXPECT_EQ(CauseOf(run, Cause::kIfClear).ops,
              run.Report("kernel.irq_disables") +
                  (naive_restore ? run.Report("kernel.irq_restores_if_clear") : 0));
    EXPECT_EQ(CauseOf(run, Cause::kCr0Write).ops, run.Report("kernel.cr0_writes"));
    EXPECT_EQ(CauseOf(run, Cause::kCr0Write).exits,
              Cr0WriteExits(fpu_switch, run.reports["config.pvops.batch"] == "on", events));
    EXPECT_EQ(CauseOf(run, Cause::kDescriptorUpdate).ops, run.Report("kernel.desc_updates"));
    EXPECT_EQ(CauseOf(run, Cause::kPageTableUpdate).ops, run.Report("kernel.pte_updates"));
    EXPECT_EQ(CauseOf(run, Cause::kMulticall).exits, run.Report("kernel.multicalls"));
    EXPECT_EQ(CauseOf(run, Cause::kMulticall).ops, run.Report("kernel.multicall_entries"));
    EXPECT_EQ(CauseOf(run, Cause::kCr3Write).ops, run.Report("kernel.cr3_writes"));
    // With batch=on every CR3 write but the boot one rides in a switch's
    // multicall.
    EXPECT_EQ(CauseOf(run, Cause::kCr3Write).exits,
              run.reports["config.pvops.batch"] == "on" ? 1 : run.Report("kernel.cr3_writes"));
    EXPECT_EQ(run.result.stats.gdt_stores_applied, 0u);
  } else {
    // Native: raw instructions. Only the GDT stores trap; CR0 and IF writes
    // are invisible to the VMM.
    EXPECT_EQ(run.result.stats.gdt_stores_applied, run.Report("kernel.desc_updates"));
    EXPECT_EQ(run.result.stats.gdt_stores_rejected, 0u);
    EXPECT_EQ(CauseOf(run, Cause::kDescriptorUpdate).exits, run.Report("kernel.desc_updates"));
    EXPECT_EQ(CauseOf(run, Cause::kCr0Write).ops, 0u);
    EXPECT_EQ(CauseOf(run, Cause::kIfSet).ops, 0u);
    EXPECT_EQ(CauseOf(run, Cause::kIfClear).ops, 0u);
    EXPECT_EQ(run.HypercallOps(MVMM_HC_set_if), 0u);
    EXPECT_EQ(CauseOf(run, Cause::kCr3Write).ops, 0u);  // mov %cr3 never reaches the VMM
    EXPECT_EQ(CauseOf(run, Cause::kCr3Write).exits, 0u);
  }
  // The boot load, then the default ring's processes: every switch into a
  // task changes the address space, the one back to init does not.
  const uint64_t ring_cr3 =
      (c.workload == "ctx" || c.workload == "pipe") ? run.Report(c.workload + ".switches") - 1 : 0;
  EXPECT_EQ(run.Report("kernel.cr3_writes"), 1 + ring_cr3);
}

std::vector<Case> Matrix() {
  std::vector<Case> cases;
  for (const char* w : {"ctx", "pipe", "irq", "cpa", "fpu"})
    for (const char* b : {"pv", "native"})
      for (const char* p :
           {"naive", "optimized", "optimized,fpu_switch:eager,pte_flags:patched,batch:off"})
        cases.push_back({w, b, p});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(All, PvopsMatrixTest, ::testing::ValuesIn(Matrix()),
                         [](const auto& info) { return Name(info.param); });

GuestRun RunPv(const std::string& pvops, const std::string& workload) {
  return RunGuest(BuiltinGuest(), "backend=pv pvops=" + pvops + " workload=" + workload);
}

// TLS shadow copies (seed optimization 1).
TEST(PvopsTest, TlsNaiveSendsThreeDescriptorsPerSwitch) {
  REQUIRE_KVM();
  GuestRun run = RunPv("naive", "ctx,tasks=3,rounds=10,tls=same");
  ASSERT_EQ(run.result.exit_code, 0) << run.console;
  // From the workload's parameters, not from the guest's counters alone.
  EXPECT_EQ(run.Report("kernel.switches"), CtxRunSwitches(3, 10));
  EXPECT_EQ(CauseOf(run, Cause::kDescriptorUpdate).ops, NaiveTlsDescUpdates(3, 10));
  EXPECT_EQ(CauseOf(run, Cause::kDescriptorUpdate).exits, NaiveTlsDescUpdates(3, 10));
}

// The IF-clear exits, which the guest counts in the wrapper that makes
// them, against the ring's parameters (tests/common/ctx_model.h).
TEST(PvopsTest, IfClearExitsOfCtxAreAClosedFormOfItsParameters) {
  REQUIRE_KVM();
  for (const auto& [tasks, rounds] : {std::pair<uint64_t, uint64_t>{2, 5}, {3, 10}, {5, 7}}) {
    for (const bool naive : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "tasks=" << tasks << " rounds=" << rounds
                                        << (naive ? " naive" : " optimized"));
      GuestRun run =
          RunPv(std::string("naive,irq_restore:") + (naive ? "naive" : "optimized"),
                "ctx,tasks=" + std::to_string(tasks) + ",rounds=" + std::to_string(rounds));
      ASSERT_EQ(run.result.exit_code, 0) << run.console;
      EXPECT_EQ(CauseOf(run, Cause::kIfClear).exits, CtxIfClearExits(naive, tasks, rounds));
    }
  }
}

TEST(PvopsTest, TlsOptimizedSendsOnlyChangedSlots) {
  REQUIRE_KVM();
  const uint64_t t = 3, n = 10;
  const std::string w = "ctx,tasks=3,rounds=10,tls=";
  // tls=same: only entering and leaving the ring change the slots (6).
  GuestRun same = RunPv("naive,tls:optimized", w + "same");
  EXPECT_EQ(same.Report("ctx.desc_updates"), 6u);
  // tls=one: one slot differs between neighbours on every switch in the ring.
  GuestRun one = RunPv("naive,tls:optimized", w + "one");
  EXPECT_EQ(one.Report("ctx.desc_updates"), 6 + t * n);
  // tls=all: every slot differs, as many as naive.
  GuestRun all = RunPv("naive,tls:optimized", w + "all");
  EXPECT_EQ(all.Report("ctx.switches"), CtxRingSwitches(t, n));
  EXPECT_EQ(all.Report("ctx.desc_updates"), 3 * CtxRingSwitches(t, n));
  for (const GuestRun* run : {&same, &one, &all}) {
    EXPECT_EQ(run->result.exit_code, 0) << run->console;
    EXPECT_EQ(CauseOf(*run, Cause::kDescriptorUpdate).ops, run->Report("kernel.desc_updates"));
  }
}

// The stts/clts pair (seed optimization 3).
TEST(PvopsTest, FpuSwitchNaiveCostsTwoCr0WritesPerOwnerPreload) {
  REQUIRE_KVM();
  const std::string w = "ctx,tasks=3,rounds=10,fpu=all";
  GuestRun naive = RunPv("naive", w);
  GuestRun optimized = RunPv("naive,fpu_switch:optimized", w);
  GuestRun eager = RunPv("naive,fpu_switch:eager", w);
  ASSERT_EQ(naive.Report("ctx.fpu_owner_preloads"), optimized.Report("ctx.fpu_owner_preloads"));
  // How many switches preload from an owner depends on whether this host
  // delivers ring-3 #NM (tests/common/fpu_model.h): 30 or 13 here.
  const bool ring3_nm = naive.Report("kernel.ring3_nm") != 0;
  const FpuEvents ring = RingFpuEvents(3, 10, ring3_nm, /*eager=*/false);
  EXPECT_EQ(naive.Report("ctx.fpu_owner_preloads"), ring.owner_preloads);
  EXPECT_EQ(naive.Report("ctx.fpu_preloads"), ring.preloads);
  EXPECT_EQ(naive.Report("ctx.nm_traps"), ring.nm_traps);
  EXPECT_GT(ring.owner_preloads, 0u);  // the seed's saving is there on every host
  EXPECT_EQ(CauseOf(naive, Cause::kCr0Write).ops - CauseOf(optimized, Cause::kCr0Write).ops,
            2 * naive.Report("ctx.fpu_owner_preloads"));
  EXPECT_EQ(CauseOf(naive, Cause::kCr0Write).exits - CauseOf(optimized, Cause::kCr0Write).exits,
            2 * naive.Report("ctx.fpu_owner_preloads"));
  EXPECT_EQ(eager.Report("ctx.cr0_writes"), 0u);
}

// Conditional irq restore (seed optimization 4).
TEST(PvopsTest, IrqRestoreNaiveAddsOneExitPerRestoreWithIfClear) {
  REQUIRE_KVM();
  const std::string w = "irq,loops=20,depth=3";
  GuestRun naive = RunPv("naive", w);
  GuestRun optimized = RunPv("naive,irq_restore:optimized", w);
  // The workload's own restores: L (d - 1) with IF clear, L with IF set.
  EXPECT_EQ(naive.Report("irq.irq_restores_if_clear"), 20u * 2u);
  EXPECT_EQ(naive.Report("irq.irq_restores_if_set"), 20u);
  // The whole run's (boot and the scheduler restore too): every one of
  // them costs naive one set_if(0) exit that optimized skips.
  const uint64_t if_clear = naive.Report("kernel.irq_restores_if_clear");
  EXPECT_EQ(if_clear, optimized.Report("kernel.irq_restores_if_clear"));
  EXPECT_EQ(naive.HypercallExits(MVMM_HC_set_if) - optimized.HypercallExits(MVMM_HC_set_if),
            if_clear);
  EXPECT_EQ(CauseOf(naive, Cause::kIfClear).exits - CauseOf(optimized, Cause::kIfClear).exits,
            if_clear);
  EXPECT_EQ(CauseOf(naive, Cause::kIfSet).exits, CauseOf(optimized, Cause::kIfSet).exits);
}

// pte_flags through pv_ops vs inline (seed optimization 2): no exits either
// way; the guest counts indirect calls.
TEST(PvopsTest, PteFlagsVariantsCostNoExitsAndTheSamePageTableUpdates) {
  REQUIRE_KVM();
  const std::string w = "cpa,pages=16,rounds=2";
  GuestRun naive = RunPv("naive", w);
  GuestRun inline_mask = RunPv("naive,pte_flags:optimized", w);
  GuestRun patched = RunPv("naive,pte_flags:patched", w);
  for (const GuestRun* run : {&naive, &inline_mask, &patched}) {
    EXPECT_EQ(run->result.exit_code, 0) << run->console;
    EXPECT_EQ(CauseOf(*run, Cause::kPageTableUpdate).ops, 2u * 16u * 2u);  // 2 R N
    EXPECT_EQ(run->HypercallExits(MVMM_HC_mmu_update), 2u * 16u * 2u);
  }
  // The same pte_flags() reads happen in every variant (2 R N + the timed
  // calls); only how they are reached differs, which costs time, not exits.
  EXPECT_GT(naive.Report("cpa.pte_flags_calls"), 0u);
  EXPECT_EQ(inline_mask.Report("cpa.pte_flags_calls"), naive.Report("cpa.pte_flags_calls"));
  EXPECT_EQ(patched.Report("cpa.pte_flags_calls"), naive.Report("cpa.pte_flags_calls"));
  EXPECT_EQ(naive.Report("kernel.patched_sites"), 0u);
  EXPECT_GT(patched.Report("kernel.patched_sites"), 0u);
}

// pte_val under each backend (lib/physmap.h): pv page tables hold machine
// frames and pte_val translates them back through the m2p, make_pte forward
// through the p2m; native is the identity. cpa rebuilds each changed entry
// from pte_val and make_pte and checks that every page still reads its own
// tag, so a wrong translation fails the run. Per variant, the guest counts
// its translations: naive and patched translate in pte_flags (the call or
// the inline m2p lookup patched in) and in the pte_pfn of each rebuilt
// entry; optimized only in the latter. None of it costs an exit.
TEST(PvopsTest, PteValTranslatesMachineFramesUnderPvOnlyWithTheSameFlagsEverywhere) {
  REQUIRE_KVM();
  const uint64_t pages = 16, rounds = 2, calls = 4;
  const std::string w = "cpa,pages=16,rounds=2,calls=4";
  std::optional<uint64_t> flags_sum;
  for (const char* backend : {"pv", "native"}) {
    std::optional<std::vector<uint64_t>> hc_exits;
    for (const std::string variant : {"naive", "patched", "optimized"}) {
      SCOPED_TRACE(std::string(backend) + " pte_flags:" + variant);
      GuestRun run =
          RunGuest(BuiltinGuest(), std::string("backend=") + backend +
                                       " pvops=naive,pte_flags:" + variant + " workload=" + w);
      ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
      ASSERT_EQ(run.result.exit_code, 0) << run.console;
      EXPECT_EQ(run.Report("check.cpa.failed"), 0u);
      EXPECT_EQ(run.Report("check.cpa.passed"), 2 * rounds);
      const uint64_t changed = run.Report("cpa.ptes_changed");
      const uint64_t flags_calls = run.Report("cpa.pte_flags_calls");
      EXPECT_EQ(changed, 2 * pages * rounds);
      EXPECT_EQ(flags_calls, 2 * pages * rounds + calls * pages);
      EXPECT_EQ(run.Report("cpa.pte_updates"), changed);
      const bool pv = std::string(backend) == "pv";
      const uint64_t m2p = !pv ? 0 : variant == "optimized" ? changed : flags_calls + changed;
      EXPECT_EQ(run.Report("cpa.m2p_lookups"), m2p);
      EXPECT_EQ(run.Report("cpa.p2m_lookups"), pv ? changed : 0);
      // Nothing else in the run translates an entry.
      EXPECT_EQ(run.Report("kernel.m2p_lookups"), run.Report("cpa.m2p_lookups"));
      EXPECT_EQ(run.Report("kernel.p2m_lookups"), run.Report("cpa.p2m_lookups"));
      EXPECT_EQ(run.Report("kernel.patched_sites") > 0, variant == "patched");
      // The flags never need the translation: every variant and backend
      // computes the same ones.
      if (!flags_sum) flags_sum = run.Report("cpa.flags_sum");
      EXPECT_EQ(run.Report("cpa.flags_sum"), *flags_sum);
      EXPECT_EQ(CauseOf(run, Cause::kPageTableUpdate).ops,
                pv ? run.Report("kernel.pte_updates") : 0);
      // The variant costs no exit: the same hypercall exits in all three.
      std::vector<uint64_t> exits(std::begin(run.result.stats.hc_exits),
                                  std::end(run.result.stats.hc_exits));
      if (!hc_exits) hc_exits = exits;
      EXPECT_EQ(exits, *hc_exits);
      EXPECT_EQ(run.HypercallExits(MVMM_HC_mmu_update), pv ? changed : 0);
    }
  }
}

// Processes and threads (lat_ctx): a switch between tasks of different
// address spaces writes CR3 through the pv op (mmuext_op NEW_BASEPTR under
// pv, mov %cr3 under native); a switch within one writes nothing. Every
// task touches its private working set each pass and checks that it holds
// its own values, so a CR3 write that did not reach the vCPU fails the run.
struct SpaceCase {
  std::string workload;  // ctx or pipe
  std::string mm;        // process or thread
  std::string backend;
  std::string batch;  // off or on
};

void PrintTo(const SpaceCase& c, std::ostream* os) {
  *os << c.workload << " mm=" << c.mm << " " << c.backend << " batch:" << c.batch;
}

class AddressSpaceTest : public ::testing::TestWithParam<SpaceCase> {};

TEST_P(AddressSpaceTest, Cr3WritesMatchTheGuestsCountExactly) {
  REQUIRE_KVM();
  const SpaceCase& c = GetParam();
  const std::string& w = c.workload;
  GuestRun run = RunGuest(BuiltinGuest(), "backend=" + c.backend + " pvops=naive,batch:" + c.batch +
                                              " workload=" + w + (w == "ctx" ? ",tasks=4" : "") +
                                              ",rounds=5,ws=12,mm=" + c.mm);
  ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
  ASSERT_EQ(run.result.exit_code, 0) << run.console;
  EXPECT_EQ(run.Report("check.failed"), 0u);
  const uint64_t t = run.Report(w + ".tasks"), n = run.Report(w + ".rounds");
  const uint64_t switches = run.Report(w + ".switches");
  ASSERT_EQ(switches, t * n + 2);
  EXPECT_EQ(run.Report(w + ".ws_bytes"), 12u * 1024u);
  // Processes: every switch but the one back to init enters another
  // address space. Threads: only entering the ring does.
  const bool processes = c.mm == "process";
  EXPECT_EQ(run.Report(w + ".address_spaces"), processes ? t : 1);
  EXPECT_EQ(run.Report(w + ".cr3_writes"), processes ? switches - 1 : 1);
  // The whole run adds the boot load.
  const uint64_t cr3_writes = run.Report("kernel.cr3_writes");
  EXPECT_EQ(cr3_writes, 1 + run.Report(w + ".cr3_writes"));
  const CauseCount& cause = CauseOf(run, Cause::kCr3Write);
  if (c.backend == "pv") {
    // Two counters: the VMM's cr3_write cause and mmuext_op counts against
    // the guest's own count of CR3 writes and of the hypercalls it issued.
    EXPECT_EQ(cause.ops, cr3_writes);
    EXPECT_EQ(run.HypercallOps(MVMM_HC_mmuext_op), cr3_writes);
    EXPECT_EQ(run.HypercallOps(MVMM_HC_mmuext_op), run.Report("kernel.hc.mmuext_op"));
    EXPECT_EQ(run.HypercallExits(MVMM_HC_mmuext_op), run.Report("kernel.hc_exits.mmuext_op"));
    EXPECT_EQ(run.result.stats.hc_errors[MVMM_HC_mmuext_op], 0u);
    // batch=off: each write is its own exit; batch=on: the switches' writes
    // are multicall entries and only the boot load exits.
    EXPECT_EQ(cause.exits, c.batch == "on" ? 1 : cr3_writes);
    EXPECT_EQ(cause.exits, run.HypercallExits(MVMM_HC_mmuext_op));
    if (c.batch == "on") {
      EXPECT_LE(run.Report(w + ".multicalls"), switches);
      EXPECT_EQ(run.HypercallExits(MVMM_HC_stack_switch), 0u);
    }
  } else {
    EXPECT_EQ(cause.ops, 0u);
    EXPECT_EQ(cause.exits, 0u);
    EXPECT_EQ(run.HypercallOps(MVMM_HC_mmuext_op), 0u);
  }
}

std::vector<SpaceCase> SpaceCases() {
  std::vector<SpaceCase> cases;
  for (const char* w : {"ctx", "pipe"})
    for (const char* mm : {"process", "thread"})
      for (const char* b : {"pv", "native"})
        for (const char* batch : {"off", "on"}) cases.push_back({w, mm, b, batch});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(All, AddressSpaceTest, ::testing::ValuesIn(SpaceCases()),
                         [](const auto& info) {
                           const SpaceCase& c = info.param;
                           return c.workload + "_" + c.mm + "_" + c.backend + "_batch_" + c.batch;
                         });

// Processes cost exactly one CR3 write per switch between them, over
// threads: the difference of the two runs is the guest's own switch count.
TEST(PvopsTest, ProcessesCostOneCr3WritePerSwitchOverThreads) {
  REQUIRE_KVM();
  GuestRun processes = RunPv("naive", "ctx,tasks=3,rounds=10,mm=process");
  GuestRun threads = RunPv("naive", "ctx,tasks=3,rounds=10,mm=thread");
  ASSERT_EQ(processes.result.exit_code, 0) << processes.console;
  ASSERT_EQ(threads.result.exit_code, 0) << threads.console;
  ASSERT_EQ(processes.Report("ctx.switches"), threads.Report("ctx.switches"));
  EXPECT_EQ(CauseOf(processes, Cause::kCr3Write).exits - CauseOf(threads, Cause::kCr3Write).exits,
            processes.Report("ctx.switches") - 2);
  // Everything else the switch does is the same.
  for (Cause other : {Cause::kCr0Write, Cause::kDescriptorUpdate, Cause::kIfSet, Cause::kIfClear})
    EXPECT_EQ(CauseOf(processes, other).exits, CauseOf(threads, other).exits);
  EXPECT_EQ(processes.result.stats.by_reason[static_cast<int>(ExitReason::kIo)] -
                threads.result.stats.by_reason[static_cast<int>(ExitReason::kIo)],
            processes.Report("ctx.switches") - 2);
}

// Multicall batching (Xen lazy modes).
TEST(PvopsTest, BatchOnMakesEachContextSwitchAtMostOneExit) {
  REQUIRE_KVM();
  GuestRun run = RunPv("naive,batch:on", "ctx,tasks=3,rounds=10");
  ASSERT_EQ(run.result.exit_code, 0) << run.console;
  // Everything a switch does is queued: no direct stack_switch or
  // update_descriptor at all, and the only direct fpu_taskswitch calls are
  // the boot-time stts and the clts of each #NM trap (outside switches).
  EXPECT_EQ(run.HypercallExits(MVMM_HC_stack_switch), 0u);
  EXPECT_EQ(run.HypercallExits(MVMM_HC_update_descriptor), 0u);
  EXPECT_EQ(run.HypercallExits(MVMM_HC_fpu_taskswitch), 1 + run.Report("kernel.nm_traps"));
  EXPECT_LE(run.Report("ctx.multicalls"), run.Report("ctx.switches"));
  EXPECT_EQ(CauseOf(run, Cause::kMulticall).ops, run.Report("kernel.multicall_entries"));
}

TEST(PvopsTest, BatchOnTurnsPageWalkUpdatesIntoMulticalls) {
  REQUIRE_KVM();
  GuestRun run = RunPv("naive,batch:on", "cpa,pages=16,rounds=2");
  ASSERT_EQ(run.result.exit_code, 0) << run.console;
  EXPECT_EQ(run.HypercallExits(MVMM_HC_mmu_update), 0u);
  EXPECT_EQ(run.HypercallOps(MVMM_HC_mmu_update), 2u * 16u * 2u);
  EXPECT_EQ(run.Report("cpa.multicalls"), 2u * 2u * 1u);  // 2 N ceil(R / 64)
}

// A protection change (pte_modify, ptep_modify_prot_start/commit): naive
// clears the entry and then writes it, two page-table updates per changed
// entry; optimized writes it once. cpa changes 2 R N entries, so the guest
// counts pte_updates = k 2 R N (k = 2 naive, 1 optimized); under pv each is
// an mmu_update, its own exit with batch=off and a multicall entry with
// batch=on, whose walks then cost 2 N ceil(k R / 64) multicalls. Under
// native the writes are plain stores and cost no hypercall.
TEST(PvopsTest, PteModifyNaiveClearsEachEntryFirstAtOnePageTableUpdateMore) {
  REQUIRE_KVM();
  const uint64_t pages = 40, rounds = 2;  // 40 entries: one multicall, 80: two
  const std::string w = "cpa,pages=40,rounds=2";
  for (const std::string backend : {"pv", "native"}) {
    for (const std::string batch : {"off", "on"}) {
      for (const bool naive : {true, false}) {
        const std::string pvops =
            "naive,batch:" + batch + ",pte_modify:" + (naive ? "naive" : "optimized");
        SCOPED_TRACE("backend=" + backend + " pvops=" + pvops);
        GuestRun run =
            RunGuest(BuiltinGuest(), "backend=" + backend + " pvops=" + pvops + " workload=" + w);
        ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown)
            << run.result.detail << run.console;
        ASSERT_EQ(run.result.exit_code, 0) << run.console;
        EXPECT_EQ(run.Report("check.cpa.failed"), 0u);
        EXPECT_EQ(run.Report("check.cpa.passed"), 2 * rounds);
        const uint64_t k = naive ? 2 : 1;
        const uint64_t updates = k * 2 * pages * rounds;
        EXPECT_EQ(run.Report("cpa.ptes_changed"), 2 * pages * rounds);
        EXPECT_EQ(run.Report("cpa.pte_updates"), updates);
        EXPECT_EQ(run.Report("kernel.pte_updates"), run.Report("cpa.pte_updates"));
        if (backend == "native") {
          EXPECT_EQ(CauseOf(run, Cause::kPageTableUpdate).ops, 0u);
          EXPECT_EQ(run.HypercallOps(MVMM_HC_mmu_update), 0u);
          continue;
        }
        EXPECT_EQ(CauseOf(run, Cause::kPageTableUpdate).ops, run.Report("kernel.pte_updates"));
        EXPECT_EQ(CauseOf(run, Cause::kPageTableUpdate).ops, updates);
        EXPECT_EQ(run.HypercallOps(MVMM_HC_mmu_update), updates);
        if (batch == "off") {
          EXPECT_EQ(run.HypercallExits(MVMM_HC_mmu_update), updates);
          EXPECT_EQ(CauseOf(run, Cause::kPageTableUpdate).exits, updates);
        } else {
          const uint64_t per_walk = (k * pages + 63) / 64;
          EXPECT_EQ(run.HypercallExits(MVMM_HC_mmu_update), 0u);
          EXPECT_EQ(run.Report("cpa.multicalls"), 2 * rounds * per_walk);
          EXPECT_EQ(run.Report("cpa.multicall_entries"), updates);
        }
      }
    }
  }
}

// One run with the wasted-exit analysis on, into *run; fatal unless the
// guest shut down cleanly with its self-checks passed.
void RunAnalysed(const std::string& backend, const std::string& pvops, const std::string& workload,
                 GuestRun* run) {
  *run =
      RunGuest(BuiltinGuest(), "backend=" + backend + " pvops=" + pvops + " workload=" + workload,
               absl::Seconds(60), 0, /*analyse_waste=*/true);
  ASSERT_EQ(run->result.reason, StopReason::kGuestShutdown) << run->result.detail << run->console;
  ASSERT_EQ(run->result.exit_code, 0) << run->console;
  EXPECT_EQ(run->Report("check.failed"), 0u);
}

// The ring-3 entry stack on a switch (sp0): naive loads next's stack on
// every switch, as Linux's __switch_to; optimized only on a switch into a
// user task (TSS.rsp0 is read on an entry from ring 3 alone, and a kernel
// thread makes none). Closed forms over the
// whole run, whose only other switches are the boot's #NM probe task's
// (init -> probe, a user task, -> init):
// - fpu,threads=K,rounds=N: K N + K + 1 switches between kernel threads and
//   init; naive loads on each and on the probe's two, optimized only once,
//   into the probe;
// - ctx,tasks=T,rounds=N (CtxRunSwitches = T N + 4): naive loads on each;
//   optimized on the probe's first and the T N + 1 into a ring task, not
//   on the two back to init.
// Under pv each load is a stack_switch, cause sp0_load: its own exit with
// batch=off, an entry of the switch's multicall with batch=on; under native
// a store into the TSS. The wasted-exit analysis finds none of naive's
// loads same-value: each writes a stack other than the one there (the
// kernel threads' loads are wasted only in that no entry from ring 3 reads
// them, which the VMM cannot see).
TEST(PvopsTest, Sp0OptimizedLoadsTheStackOnlyOnASwitchIntoAUserTask) {
  REQUIRE_KVM();
  const uint64_t k = 3, n = 5;  // fpu threads, ctx tasks; rounds
  const std::string sizes = ",rounds=" + std::to_string(n);
  struct Workload {
    std::string spec;
    uint64_t naive, optimized;  // sp0 loads over the whole run
  };
  const Workload workloads[] = {
      {"fpu,threads=" + std::to_string(k) + sizes, k * n + k + 1 + kBootProbeSwitches, 1},
      {"ctx,tasks=" + std::to_string(k) + sizes, CtxRunSwitches(k, n),
       1 + CtxRingSwitches(k, n) - 1},
  };
  for (const Workload& w : workloads) {
    for (const std::string backend : {"pv", "native"}) {
      for (const std::string batch : {"off", "on"}) {
        if (backend == "native" && batch == "on") continue;  // native has no batches
        for (const bool naive : {true, false}) {
          const std::string pvops =
              "naive,batch:" + batch + ",sp0:" + (naive ? "naive" : "optimized");
          SCOPED_TRACE("backend=" + backend + " pvops=" + pvops + " workload=" + w.spec);
          GuestRun run;
          ASSERT_NO_FATAL_FAILURE(RunAnalysed(backend, pvops, w.spec, &run));
          EXPECT_EQ(run.reports["config.pvops.sp0"], naive ? "naive" : "optimized");
          const uint64_t loads = naive ? w.naive : w.optimized;
          EXPECT_EQ(run.Report("kernel.sp0_loads"), loads);
          const CauseCount& sp0 = CauseOf(run, Cause::kSp0Load);
          const int i = static_cast<int>(Cause::kSp0Load);
          EXPECT_EQ(run.result.stats.wasted_by_cause[i].exits, 0u);
          if (backend == "native") {
            EXPECT_EQ(sp0.ops, 0u);
            EXPECT_EQ(run.HypercallOps(MVMM_HC_stack_switch), 0u);
            continue;
          }
          EXPECT_EQ(sp0.ops, run.Report("kernel.sp0_loads"));
          EXPECT_EQ(sp0.ops, loads);
          EXPECT_EQ(run.HypercallOps(MVMM_HC_stack_switch), loads);
          EXPECT_EQ(sp0.exits, batch == "off" ? loads : 0u);
          EXPECT_EQ(run.HypercallExits(MVMM_HC_stack_switch), sp0.exits);
        }
      }
    }
  }
}

// switch_mm (docs/exit-model.md "8."): naive loads a user task's address
// space on every switch into it, optimized only when the CPU holds another
// one. Naive's extra writes load what CR3 already holds, so the wasted-exit
// analysis calls each of them same_value, under cr3_write; optimized wastes
// none. Held against the guest's own cr3_writes and against closed forms of
// ctx's parameters (tests/common/ctx_model.h), which the guest did not count.
TEST(PvopsTest, SwitchMmNaiveReloadsTheAddressSpaceCr3AlreadyHolds) {
  REQUIRE_KVM();
  const uint64_t t = 3, n = 5;
  struct Backend {
    std::string backend, batch;
  };
  const Backend backends[] = {{"pv", "off"}, {"pv", "on"}, {"native", "off"}};
  for (const std::string mm : {"thread", "process"}) {
    const bool processes = mm == "process";
    for (const Backend& b : backends) {
      // With processes naive differs only at the boot probe's switch: one
      // backend shows it.
      if (processes && (b.backend != "pv" || b.batch != "off")) continue;
      for (const bool naive : {true, false}) {
        const std::string pvops =
            "naive,batch:" + b.batch + ",switch_mm:" + (naive ? "naive" : "optimized");
        const std::string workload =
            "ctx,tasks=" + std::to_string(t) + ",rounds=" + std::to_string(n) + ",mm=" + mm;
        SCOPED_TRACE("backend=" + b.backend + " pvops=" + pvops + " workload=" + workload);
        GuestRun run;
        ASSERT_NO_FATAL_FAILURE(RunAnalysed(b.backend, pvops, workload, &run));
        EXPECT_EQ(run.reports["config.pvops.switch_mm"], naive ? "naive" : "optimized");
        ASSERT_EQ(run.Report("ctx.switches"), CtxRingSwitches(t, n));
        EXPECT_EQ(run.Report("ctx.cr3_writes"), CtxRingCr3Writes(naive, processes, t, n));
        const uint64_t writes = CtxCr3Writes(naive, processes, t, n);
        EXPECT_EQ(run.Report("kernel.cr3_writes"), writes);
        const int i = static_cast<int>(Cause::kCr3Write);
        const CauseCount& cause = CauseOf(run, Cause::kCr3Write);
        const CauseCount& same = run.result.stats.wasted_same_value_by_cause[i];
        const CauseCount& wasted = run.result.stats.wasted_by_cause[i];
        if (b.backend == "native") {
          EXPECT_EQ(cause.ops, 0u);
          EXPECT_EQ(wasted.ops, 0u);
          continue;
        }
        EXPECT_EQ(cause.ops, run.Report("kernel.cr3_writes"));
        EXPECT_EQ(run.HypercallOps(MVMM_HC_mmuext_op), writes);
        // batch=on: the switches' writes are entries of their multicalls;
        // only the boot load exits.
        EXPECT_EQ(cause.exits, b.batch == "off" ? writes : 1u);
        // Every wasted write is same_value, and exactly naive's extra ones.
        const uint64_t same_writes = CtxSameCr3Writes(naive, processes, t, n);
        EXPECT_EQ(same.ops, same_writes);
        EXPECT_EQ(wasted.ops, same_writes);
        EXPECT_EQ(same.exits, b.batch == "off" ? same_writes : 0u);
        EXPECT_EQ(wasted.exits, same.exits);
      }
    }
  }
}

}  // namespace
}  // namespace minivmm::testing

namespace minivmm::testing {
namespace {

// Correctness never depends on the variant: every combination of every op's
// variants, on both backends, passes the guest's self-checks, and the
// per-hypercall counts still match. batch only under pv: it is the pv
// backend's own (PvBatching, read by guest/pv/paravirt.cc alone), so under
// native batch:on runs exactly what batch:off runs. A small ring (TLS, FPU, irq restores and
// switches) and a small page walk (pte_flags, mmu_update, batching) in one
// run each.
struct Combination {
  std::string backend;
  std::string pvops;
};

void PrintTo(const Combination& c, std::ostream* os) { *os << c.backend << " " << c.pvops; }

class PvopsCombinationTest : public ::testing::TestWithParam<Combination> {};

TEST_P(PvopsCombinationTest, SelfChecksPass) {
  REQUIRE_KVM();
  for (const char* workload : {"ctx,tasks=2,rounds=3,fpu=all,tls=one", "cpa,pages=4,rounds=1"}) {
    GuestRun run =
        RunGuest(BuiltinGuest(), "backend=" + GetParam().backend + " pvops=" + GetParam().pvops +
                                     " workload=" + workload);
    ASSERT_EQ(run.result.reason, StopReason::kGuestShutdown) << run.result.detail << run.console;
    EXPECT_EQ(run.result.exit_code, 0) << workload << "\n" << run.console;
    EXPECT_EQ(run.Report("check.failed"), 0u) << workload;
    for (const char* name : kHypercalls)
      EXPECT_EQ(run.HypercallOps(Nr(name)), run.Report(std::string("kernel.hc.") + name)) << name;
  }
}

std::vector<Combination> AllCombinations() {
  std::vector<Combination> out;
  for (const char* backend : {"pv", "native"})
    for (const char* irq : {"naive", "optimized"})
      for (const char* fpu : {"naive", "optimized", "eager"})
        for (const char* tls : {"naive", "optimized"})
          for (const char* pte : {"naive", "optimized", "patched"})
            for (const char* batch : {"off", "on"}) {
              if (std::string_view(backend) == "native" && std::string_view(batch) == "on")
                continue;
              out.push_back({backend, std::string("irq_restore:") + irq + ",fpu_switch:" + fpu +
                                          ",tls:" + tls + ",pte_flags:" + pte + ",batch:" + batch});
            }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Every, PvopsCombinationTest, ::testing::ValuesIn(AllCombinations()));

}  // namespace
}  // namespace minivmm::testing
