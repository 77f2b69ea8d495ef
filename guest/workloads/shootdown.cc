// workload=shootdown,rounds=R: a TLB shootdown across every CPU. One user
// address space (an Mm like a ctx process's) maps one page at a fixed
// address, kPrivateBase. CPU 0 and then every other CPU load it once (a
// write_cr3 each; the others in a CALL IPI). Then, per round r:
// CPU 0 writes a value of round r into the page the address is not mapped
// to, remaps the address to it (set_pte: mmu_update under pv), flushes its
// own TLB, reads the address itself, and has every other CPU flush with the
// flush_tlb variant (FlushTlbOthers: naive, a FLUSH request and IPI to each
// and a wait for each to flush; optimized, one flush_tlb_others, which finds
// every other CPU blocked and only flags it). Then a CALL IPI asks each of
// them to read the address (it flushes first if it was only flagged), and
// CPU 0 checks every value read: a stale mapping would show the other
// page's value, of round r - 1. Between phases CPU 0 waits, reading memory,
// until every other CPU is blocked again, so every IPI and every
// flush_tlb_others finds every target blocked: the counts are exact
// (docs/exit-model.md "SMP"). With one CPU there are no targets: no IPI and
// no flush of others at all.
#include "arch/cpu.h"
#include "kernel/mem.h"
#include "kernel/percpu.h"
#include "kernel/sched.h"
#include "kernel/smp.h"
#include "kernel/syscall.h"
#include "kernel/syscall_abi.h"
#include "pv/pv_ops.h"
#include "workloads/workload.h"

namespace guest {
namespace {

constexpr uint64_t kSharedVa = kPrivateBase;
constexpr uint64_t kUserPage = kPtePresent | kPteWrite | kPteUser | kPteNx;

uint64_t RoundValue(uint64_t round) { return 0x5d00000000000000ull | round; }

uint64_t ReadShared() { return *reinterpret_cast<const volatile uint64_t*>(kSharedVa); }

// On another CPU, in its IPI handler (a CALL).
uint64_t JoinMm(uint64_t pml4) {
  WriteCr3(pml4);
  return 1;
}
uint64_t ReadSharedCall(uint64_t) { return ReadShared(); }

// One counted self-check: `got` must be `want`.
void Check(uint64_t got, uint64_t want, uint64_t* checks) {
  if (got != want) SelfCheckFailed(Current(), kCheckShootdown);
  ++*checks;
}

// Every other CPU's result of the last CALL must be `want`.
void CheckResults(uint64_t mask, uint64_t want, uint64_t* checks) {
  for (uint64_t rest = mask; rest != 0; rest &= rest - 1)
    Check(SmpCallResult(static_cast<uint32_t>(__builtin_ctzll(rest))), want, checks);
}

}  // namespace

void RunShootdown(const WorkloadArgs& args) {
  const uint64_t rounds = args.Get("rounds");
  const uint64_t others = OtherCpusMask();
  WorkloadRecord rec("shootdown");
  uint64_t checks = 0;

  Mm* mm = NewMm();
  uint64_t* pages[2] = {static_cast<uint64_t*>(AllocPages(1)),
                        static_cast<uint64_t*>(AllocPages(1))};
  pages[0][0] = RoundValue(0);
  MapPrivatePage(mm, kSharedVa, reinterpret_cast<uint64_t>(pages[0]));
  uint64_t* pte = PrivatePte(mm, kSharedVa);
  const uint64_t pml4 = reinterpret_cast<uint64_t>(mm->pml4);

  // Every CPU joins the address space once.
  const uint64_t old_cr3 = cpu::ReadCr3();
  WriteCr3(pml4);
  Check(ReadShared(), RoundValue(0), &checks);
  SmpCallFunctionMany(others, JoinMm, pml4);
  CheckResults(others, 1, &checks);
  SmpWaitBlocked(others);

  for (uint64_t round = 1; round <= rounds; ++round) {
    uint64_t* page = pages[round % 2];
    page[0] = RoundValue(round);
    SetPte(pte, MakePte(reinterpret_cast<uint64_t>(page) | kUserPage));
    pv_ops.flush_tlb();  // this CPU's own entry
    Check(ReadShared(), RoundValue(round), &checks);
    FlushTlbOthers(others);
    SmpWaitBlocked(others);
    SmpCallFunctionMany(others, ReadSharedCall, 0);
    CheckResults(others, RoundValue(round), &checks);
    SmpWaitBlocked(others);
  }
  WriteCr3(old_cr3);

  rec.Put("cpus", NrCpus());
  rec.Put("rounds", rounds);
  rec.Put("targets", static_cast<uint64_t>(__builtin_popcountll(others)));
  rec.Finish(checks);
}

}  // namespace guest
