#include "kernel/smp.h"

#include "arch/cpu.h"
#include "arch/trap.h"
#include "kernel/boot.h"
#include "kernel/counters.h"
#include "kernel/hypercall.h"
#include "kernel/mem.h"
#include "kernel/percpu.h"
#include "kernel/sched.h"
#include "kernel/spinlock.h"
#include "pv/pv_ops.h"

namespace guest {
namespace {

// Mailbox requests.
constexpr uint32_t kRequestFlush = 1u << 0;
constexpr uint32_t kRequestCall = 1u << 1;

// Requests to one CPU. Only CPU 0 sends: it writes fn and arg, then sets a
// bit of `pending` (atomic OR, release); the target takes the bits with an
// atomic exchange, does what they ask and then increments the matching
// acknowledgement (release), after `result` for a CALL.
struct Mailbox {
  uint32_t pending;
  SmpCallFn fn;
  uint64_t arg;
  uint64_t result;
  uint64_t flush_acks;
  uint64_t call_acks;
  uint64_t flush_want;  // CPU 0's: the acks that mean "done"
  uint64_t call_want;
};

// One CPU's IPI state. Its counters are written by that CPU only (its
// other counts are in its Cpu, percpu.h); the run state by the VMM
// (`state`) and by the VMM and this CPU (`flags`: the VMM ORs
// MVMM_RUNSTATE_FLUSH_TLB in, the CPU takes it with an exchange).
struct CpuState {
  alignas(MVMM_VCPU_RUNSTATE_ALIGN) mvmm_vcpu_runstate runstate;
  Mailbox mailbox;
  uint64_t bringup_hypercalls;
  uint64_t ipi_flushes;
  uint64_t flag_flushes;
  uint64_t ipi_calls;
  int64_t register_result;  // vcpu_op's; written before `registered`
  uint32_t registered;      // 1 once register_result is set
};

// Set by CPU 0 once BSS is zeroed and the IDT built. In .data, not BSS: the
// other CPUs read it while CPU 0 zeroes BSS.
__attribute__((section(".data"))) uint32_t g_smp_released = 0;

CpuState g_cpu[MVMM_MAX_CPUS];
uint32_t g_nr_cpus = 1;
uint32_t g_cpus_up = 1;  // CPU 0

// The idle window (IdleBlock): its first instruction and the one after the
// block hypercall.
extern "C" const char idle_window_start[], idle_window_end[];

// The check and the block as one window: returns false without blocking
// when a task is queued at *head, true after one sched_op(block). An
// interrupt taken before the block's `out` completed resumes at the check
// (RestartIdleWindow). One copy only (noinline, noclone): the labels are
// global.
__attribute__((noinline, noclone)) bool IdleBlockWindow(Task* const* head) {
  uint64_t rax = MVMM_HC_sched_op;
  uint64_t blocked = 0;
  asm volatile(
      ".globl idle_window_start\n"
      "idle_window_start:\n"
      "cmpq $0, (%[head])\n"
      "jne 1f\n"
      "outl %%eax, %[port]\n"
      ".globl idle_window_end\n"
      "idle_window_end:\n"
      "mov $1, %[blocked]\n"
      "1:\n"
      : "+a"(rax), [blocked] "+r"(blocked)
      : [head] "r"(head),
        "D"(static_cast<uint64_t>(MVMM_SCHEDOP_BLOCK)), [port] "i"(MVMM_HYPERCALL_PORT)
      : "memory", "cc");
  return blocked != 0;
}

void Ack(uint64_t* acks) { __atomic_store_n(acks, *acks + 1, __ATOMIC_RELEASE); }

template <typename Fn>
void ForEachCpu(uint64_t mask, Fn fn) {
  for (; mask != 0; mask &= mask - 1) fn(static_cast<uint32_t>(__builtin_ctzll(mask)));
}

// CPU 0: posts `request` to every CPU in `mask` and IPIs them (send_ipi pv
// op); RequestWait then waits until each acknowledged it (`acks` of its
// mailbox reached `want`, which RequestPost set).
void RequestPost(uint64_t mask, uint32_t request, uint64_t Mailbox::*acks,
                 uint64_t Mailbox::*want) {
  ForEachCpu(mask, [&](uint32_t cpu) {
    Mailbox& m = g_cpu[cpu].mailbox;
    m.*want = __atomic_load_n(&(m.*acks), __ATOMIC_ACQUIRE) + 1;
    __atomic_fetch_or(&m.pending, request, __ATOMIC_RELEASE);
  });
  SendIpiMask(mask);
}
void RequestWait(uint64_t mask, uint64_t Mailbox::*acks, uint64_t Mailbox::*want) {
  ForEachCpu(mask, [&](uint32_t cpu) {
    const Mailbox& m = g_cpu[cpu].mailbox;
    while (__atomic_load_n(&(m.*acks), __ATOMIC_ACQUIRE) < m.*want) cpu::Pause();
  });
}

}  // namespace

bool SmpBoot(uint32_t nr_cpus) {
  g_nr_cpus = nr_cpus;
  if (nr_cpus <= 1) return true;
  for (uint32_t cpu = 1; cpu < nr_cpus; ++cpu) g_cpus[cpu].id = cpu;
  __atomic_store_n(&g_smp_released, 1, __ATOMIC_RELEASE);
  bool ok = true;
  for (uint32_t cpu = 1; cpu < nr_cpus; ++cpu) {
    CpuState& ap = g_cpu[cpu];
    while (__atomic_load_n(&ap.registered, __ATOMIC_ACQUIRE) == 0) cpu::Pause();
    if (ap.register_result < 0) {
      ok = false;
      continue;
    }
    while (__atomic_load_n(&ap.runstate.state, __ATOMIC_ACQUIRE) != MVMM_RUNSTATE_BLOCKED)
      cpu::Pause();
  }
  return ok;
}

uint32_t CpusUp() { return __atomic_load_n(&g_cpus_up, __ATOMIC_ACQUIRE); }

uint32_t NrCpus() { return g_nr_cpus; }

uint64_t OtherCpusMask() {
  const uint64_t all = g_nr_cpus >= 64 ? ~0ull : (1ull << g_nr_cpus) - 1;
  return all & ~(1ull << CurrentCpu());
}

void IpiInterrupt() {
  CpuState& me = g_cpu[CurrentCpu()];
  Count(&KernelCounters::ipis);
  TakeFlushFlag();
  Mailbox& m = me.mailbox;
  const uint32_t requests = __atomic_exchange_n(&m.pending, 0u, __ATOMIC_ACQ_REL);
  if (requests & kRequestFlush) {
    FlushTlb();  // a native CR3 reload: no exit
    ++me.ipi_flushes;
    Ack(&m.flush_acks);
  }
  if (requests & kRequestCall) {
    m.result = m.fn(m.arg);
    ++me.ipi_calls;
    Ack(&m.call_acks);
  }
}

void SmpCallFunctionMany(uint64_t mask, SmpCallFn fn, uint64_t arg) {
  SmpCallFunctionStart(mask, fn, arg);
  SmpCallWait(mask);
}

void SmpCallFunctionStart(uint64_t mask, SmpCallFn fn, uint64_t arg) {
  ForEachCpu(mask, [&](uint32_t cpu) {
    g_cpu[cpu].mailbox.fn = fn;
    g_cpu[cpu].mailbox.arg = arg;
  });
  RequestPost(mask, kRequestCall, &Mailbox::call_acks, &Mailbox::call_want);
}

void SmpCallWait(uint64_t mask) { RequestWait(mask, &Mailbox::call_acks, &Mailbox::call_want); }

uint64_t SmpCallResult(uint32_t cpu) { return g_cpu[cpu].mailbox.result; }

void SmpFlushOthersByIpi(uint64_t mask) {
  RequestPost(mask, kRequestFlush, &Mailbox::flush_acks, &Mailbox::flush_want);
  RequestWait(mask, &Mailbox::flush_acks, &Mailbox::flush_want);
}

void SmpWaitBlocked(uint64_t mask) {
  ForEachCpu(mask, [](uint32_t cpu) {
    while (__atomic_load_n(&g_cpu[cpu].runstate.state, __ATOMIC_ACQUIRE) != MVMM_RUNSTATE_BLOCKED)
      cpu::Pause();
  });
}

void TakeFlushFlag() {
  CpuState& me = g_cpu[CurrentCpu()];
  if (__atomic_exchange_n(&me.runstate.flags, 0u, __ATOMIC_ACQ_REL) & MVMM_RUNSTATE_FLUSH_TLB) {
    FlushTlb();
    ++me.flag_flushes;
  }
}

void IdleBlock(Task* const* head) {
  // Counted before the block: the last block of an idle CPU never returns
  // (the VM's stop ends it), and CPU 0 reports while the others are blocked.
  if constexpr (!kCounters) {
    IdleBlockWindow(head);
    return;
  }
  KernelCounters& kc = Kc();
  HypercallCounts& hc = Hc();
  ++kc.idle_blocks;
  ++hc.ops[MVMM_HC_sched_op];
  ++hc.exits[MVMM_HC_sched_op];
  if (!IdleBlockWindow(head)) {
    --kc.idle_blocks;
    --hc.ops[MVMM_HC_sched_op];
    --hc.exits[MVMM_HC_sched_op];
  }
}

void RestartIdleWindow(TrapFrame* f) {
  const uint64_t start = reinterpret_cast<uint64_t>(idle_window_start);
  if (f->rip >= start && f->rip < reinterpret_cast<uint64_t>(idle_window_end)) {
    f->rip = start;
    Count(&KernelCounters::idle_restarts);
  }
}

void AppendSmpReport(TextBuf* out) {
  out->Kv("kernel.cpus_up", CpusUp());
  AppendLockCounts("kernel", 0, out);
  for (uint32_t cpu = 1; cpu < g_nr_cpus; ++cpu) {
    const CpuState& ap = g_cpu[cpu];
    const KernelCounters& kc = g_cpus[cpu].kc;
    const HypercallCounts& hc = g_cpus[cpu].hc;
    char storage[40];
    TextBuf p(storage, sizeof(storage));
    p.Str("smp.cpu").Dec(cpu);
    out->Kv(p.View(), "bringup_hypercalls", ap.bringup_hypercalls);
    out->Kv(p.View(), "ipi_flushes", ap.ipi_flushes);
    out->Kv(p.View(), "flag_flushes", ap.flag_flushes);
    out->Kv(p.View(), "ipi_calls", ap.ipi_calls);
    AppendLockCounts(p.View(), cpu, out);
    if constexpr (!kCounters) continue;
    // Its kernel counters: these three always, the others when not zero
    // (the record has a size limit, and most stay zero on a CPU that only
    // serves IPIs).
    out->Kv(p.View(), "idle_blocks", kc.idle_blocks);
    out->Kv(p.View(), "ipis", kc.ipis);
    out->Kv(p.View(), "cr3_writes", kc.cr3_writes);
#define GUEST_SMP_KC_(name)                                                          \
  if (kc.name != 0 && StrView(#name) != "idle_blocks" && StrView(#name) != "ipis" && \
      StrView(#name) != "cr3_writes")                                                \
    out->Kv(p.View(), #name, kc.name);
    GUEST_COUNTER_LIST(GUEST_SMP_KC_)
#undef GUEST_SMP_KC_
    p.Str(".hc_exits");
#define GUEST_SMP_HC_(nr, name) \
  if (hc.exits[nr] != 0) out->Kv(p.View(), #name, hc.exits[nr]);
    MVMM_HYPERCALL_LIST(GUEST_SMP_HC_)
#undef GUEST_SMP_HC_
  }
}

}  // namespace guest

using namespace guest;

extern "C" [[noreturn]] void ApMain(const mvmm_boot_info*, uint64_t cpu) {
  while (__atomic_load_n(&g_smp_released, __ATOMIC_ACQUIRE) == 0) cpu::Pause();
  if (cpu >= MVMM_MAX_CPUS) {
    for (;;) asm volatile("hlt");  // no state for it: idle without a word
  }
  CpuState& me = g_cpu[cpu];
  if (CurrentCpu() != cpu) {
    // A VMM that gave every CPU the same GDT: this CPU cannot find its own
    // state. SmpBoot reports it; this CPU idles without a word.
    me.register_result = -MVMM_EINVAL;
    __atomic_store_n(&me.registered, 1, __ATOMIC_RELEASE);
    for (;;) asm volatile("hlt");
  }
  IdtLoad();
  __atomic_fetch_add(&g_cpus_up, 1, __ATOMIC_ACQ_REL);
  ++me.bringup_hypercalls;
  me.register_result = Hypercall(MVMM_HC_vcpu_op, MVMM_VCPUOP_REGISTER_RUNSTATE_AREA, cpu,
                                 reinterpret_cast<uint64_t>(&me.runstate));
  __atomic_store_n(&me.registered, 1, __ATOMIC_RELEASE);
  // Interrupts on for good: from here on an IPI ends a block and is taken
  // right after it (nobody sends one before this CPU is first blocked).
  ++me.bringup_hypercalls;
  Hypercall(MVMM_HC_set_if, 1);
  // Requests are served in the IPI handler; tasks queued here run from
  // the idle loop. After every block, and before this CPU could touch a
  // user mapping, a flush another CPU's flush_tlb_others deferred to it.
  ApIdleLoop();
}
