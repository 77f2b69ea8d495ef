#include "kernel/smp.h"

#include "arch/cpu.h"
#include "arch/trap.h"
#include "kernel/hypercall.h"

namespace guest {
namespace {

// What a secondary CPU did, written only by that CPU.
struct ApState {
  alignas(MVMM_VCPU_RUNSTATE_ALIGN) mvmm_vcpu_runstate runstate;  // the VMM writes it
  uint64_t bringup_hypercalls;
  uint64_t idle_blocks;
  int64_t register_result;  // vcpu_op's; written before `registered`
  uint32_t registered;      // 1 once register_result is set
};

// Set by CPU 0 once BSS is zeroed and the IDT built. In .data, not BSS: the
// other CPUs read it while CPU 0 zeroes BSS.
__attribute__((section(".data"))) uint32_t g_smp_released = 0;

ApState g_ap[MVMM_MAX_CPUS];
uint32_t g_nr_cpus = 1;
uint32_t g_cpus_up = 1;  // CPU 0

}  // namespace

bool SmpBoot(uint32_t nr_cpus) {
  g_nr_cpus = nr_cpus;
  if (nr_cpus <= 1) return true;
  __atomic_store_n(&g_smp_released, 1, __ATOMIC_RELEASE);
  bool ok = true;
  for (uint32_t cpu = 1; cpu < nr_cpus; ++cpu) {
    ApState& ap = g_ap[cpu];
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

void AppendSmpReport(TextBuf* out) {
  out->Kv("kernel.cpus_up", CpusUp());
  for (uint32_t cpu = 1; cpu < g_nr_cpus; ++cpu) {
    char prefix[24];
    TextBuf p(prefix, sizeof(prefix));
    p.Str("smp.cpu").Dec(cpu);
    out->Kv(p.View(), "bringup_hypercalls", g_ap[cpu].bringup_hypercalls);
    out->Kv(p.View(), "idle_blocks", g_ap[cpu].idle_blocks);
  }
}

}  // namespace guest

using namespace guest;

// Uncounted hypercalls (RawHypercall): kernel.hc* are CPU 0's counts, which
// this CPU must not race on; it keeps its own in ApState.
extern "C" [[noreturn]] void ApMain(const mvmm_boot_info*, uint64_t cpu) {
  while (__atomic_load_n(&g_smp_released, __ATOMIC_ACQUIRE) == 0) cpu::Pause();
  if (cpu >= MVMM_MAX_CPUS) {
    for (;;) asm volatile("hlt");  // no state for it: idle without a word
  }
  IdtLoad();
  __atomic_fetch_add(&g_cpus_up, 1, __ATOMIC_ACQ_REL);
  ApState& me = g_ap[cpu];
  ++me.bringup_hypercalls;
  me.register_result = RawHypercall(MVMM_HC_vcpu_op, MVMM_VCPUOP_REGISTER_RUNSTATE_AREA, cpu,
                                    reinterpret_cast<uint64_t>(&me.runstate));
  __atomic_store_n(&me.registered, 1, __ATOMIC_RELEASE);
  // Nothing wakes this CPU (timers reach CPU 0 only): the first block lasts
  // until the VM stops.
  for (;;) {
    ++me.idle_blocks;
    RawHypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_BLOCK);
  }
}
