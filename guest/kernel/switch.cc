#include "kernel/switch.h"

#include "arch/cpu.h"
#include "kernel/boot.h"
#include "kernel/counters.h"
#include "kernel/fpu.h"
#include "kernel/mem.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"
#include "minivmm_abi/boot.h"
#include "pv/pv_ops.h"

namespace guest {
namespace {

constexpr uint32_t kFsUnknown = 0x10000;  // no selector

// Per CPU, each written by its own CPU only.
struct SwitchState {
  TlsShadow tls_shadow;     // what the VMM was last sent (empty slots at boot)
  Mm* active_mm = nullptr;  // the address space CR3 holds (null: the boot tables)
  bool fpu_ready = false;   // CR0.TS set up for the FPU policy (FpuCpuInit)
  // What %fs holds: its selector (kFsUnknown until this CPU's first switch)
  // and, while fs_base_known, the 64-bit base last written.
  uint32_t fs_sel = kFsUnknown;
  bool fs_base_known = false;
  uint64_t fs_base = 0;
};
constinit SwitchState g_switch[MVMM_MAX_CPUS];

SwitchState& Mine() { return g_switch[CurrentCpu()]; }
bool g_ring3_nm_seen = false;
bool g_probing = true;  // until FpuPolicyInit: #NM is expected under every policy

Variant FpuPolicy() { return PvVariant(PvOp::kFpuSwitch); }

void SaveFpu(Task* t) {
  Count(&KernelCounters::fpu_saves);
  cpu::Fxsave(t->fxsave);
}

void RestoreFpu(Task* t) {
  Count(&KernelCounters::fpu_restores);
  cpu::Fxrstor(t->fxsave);
}

// Linux 3.x: preload when the task used the FPU in more than 5 consecutive
// time slices. A ring-3 FPU user on a host without ring-3 #NM counts as
// using it in every slice: no trap would ever tell us it did.
bool WantPreload(const Task* next) {
  if (!next->used_math) return false;
  return next->fpu_counter > 5 || (next->fpu_user && !g_boot.ring3_nm);
}

// switch_fpu_prepare. Returns true when next's state must be restored
// after the lazy section (TS is already clear for it).
bool FpuSwitchPrepare(Task* prev, Task* next) {
  Variant policy = FpuPolicy();
  if (policy == Variant::kEager) {
    // Today's Linux: TS stays clear; save and restore every FPU user.
    if (prev->used_math) SaveFpu(prev);
    prev->has_fpu = false;
    if (next->used_math) {
      Count(&KernelCounters::fpu_preloads);
      next->has_fpu = true;
      return true;
    }
    return false;
  }
  bool preload = WantPreload(next);
  if (preload) Count(&KernelCounters::fpu_preloads);
  // The switches where naive pays the stts/clts pair and optimized nothing.
  if (preload && prev->has_fpu) Count(&KernelCounters::fpu_owner_preloads);
  if (policy == Variant::kNaive) {
    // __unlazy_fpu(prev): save and set TS; then clts for a preload: the
    // stts/clts pair, two CR0 writes when prev owned the FPU.
    if (prev->has_fpu) {
      SaveFpu(prev);
      prev->has_fpu = false;
      Stts();
    } else {
      prev->fpu_counter = 0;
    }
    if (preload) {
      Clts();
      next->has_fpu = true;
    }
    return preload;
  }
  // __unlazy_fpu_clts(prev): save without touching TS; write CR0 only when
  // the TS state must actually change.
  if (prev->has_fpu) {
    SaveFpu(prev);
    prev->has_fpu = false;
    if (!preload) Stts();
  } else {
    prev->fpu_counter = 0;
    if (preload) Clts();
  }
  if (preload) next->has_fpu = true;
  return preload;
}

// switch_mm with the switch_mm variant: a kernel thread (no mm) keeps the
// loaded address space (lazy TLB) under both; a user task's is loaded on
// every switch into it under naive, and under optimized (Linux's
// `prev != next`) only when the CPU holds another one. So naive's extra
// writes are all of the address space CR3 already holds.
void SwitchMm(const Task* next) {
  Mm*& active = Mine().active_mm;
  if (next->mm == nullptr) return;
  if (next->mm == active && PvVariant(PvOp::kSwitchMm) != Variant::kNaive) return;
  active = next->mm;
  WriteCr3(reinterpret_cast<uint64_t>(next->mm->pml4));
}

// load_TLS with the tls variant: naive sends all three descriptors,
// optimized only those that differ from the per-CPU shadow. Each one sent
// is a WriteGdtEntry, counted as desc_updates.
void LoadTls(const Task* next) {
  unsigned mask = 7;
  if (PvVariant(PvOp::kTls) != Variant::kNaive) mask = Mine().tls_shadow.Changed(next->tls);
  for (int i = 0; i < kTlsSlots; ++i) {
    if (mask & (1u << i)) WriteGdtEntry(MVMM_GDT_TLS_FIRST + i, next->tls[i]);
  }
}

// %fs for next (Linux's load_seg_legacy(FS) with the fs_base variant): the
// selector first, unless the CPU already holds a null one and next wants a
// null one (a kernel thread, or a task with a 64-bit base), which leaves the
// base alone; a selector load makes the base unknown (a null selector zeroes
// it on Intel, keeps it on AMD). Then, for a task with a 64-bit base: naive
// writes it on every switch, optimized only when the CPU does not hold it.
// So a switch to the idle task and back writes nothing under optimized.
void SwitchFs(const Task* next) {
  SwitchState& s = Mine();
  if (next->fs_sel != 0 || s.fs_sel != 0) {
    cpu::LoadFs(next->fs_sel);
    s.fs_sel = next->fs_sel;
    s.fs_base_known = false;
  }
  if (next->fs_base == 0) return;
  if (PvVariant(PvOp::kFsBase) == Variant::kNaive || !s.fs_base_known ||
      s.fs_base != next->fs_base) {
    WriteFsBase(next->fs_base);
    s.fs_base_known = true;
    s.fs_base = next->fs_base;
  }
}

// A secondary CPU's first context switch: TS set, as CPU 0 has it, under
// the lazy policies (nobody owns this CPU's FPU yet); clear (as the VMM
// entered it) under eager. Done here, not at bring-up, because the CPUs come
// up before the policy is known, and only CPUs that run tasks pay for it.
void FpuCpuInit() {
  SwitchState& s = Mine();
  if (s.fpu_ready) return;
  s.fpu_ready = true;
  if (FpuPolicy() != Variant::kEager) Stts();
}

}  // namespace

uint16_t SelectorFor(const Task* t, int slot) { return t->tls[slot] ? MVMM_SEL_TLS(slot) : 0; }

void SetTaskTls(Task* t, const uint64_t tls[kTlsSlots]) {
  for (int i = 0; i < kTlsSlots; ++i) t->tls[i] = tls[i];
  t->fs_sel = t->fs_base != 0 ? 0 : SelectorFor(t, 0);
  t->gs_sel = SelectorFor(t, 1);
}

void SetTaskFsBase(Task* t, uint64_t base) {
  t->fs_base = base;
  t->fs_sel = 0;
}

void ReloadTls(Task* t) {
  if (t->fs_base == 0) t->fs_sel = SelectorFor(t, 0);
  t->gs_sel = SelectorFor(t, 1);
  LoadTls(t);
  Mine().fs_sel = kFsUnknown;  // SwitchFs reloads %fs, and the base if any
  SwitchFs(t);
  cpu::LoadGs(t->gs_sel);
}

void SwitchInit() {
  g_switch[0].active_mm = KernelMm();  // the others still run on the boot tables
  g_switch[0].fpu_ready = true;
  Stts();  // nobody owns the FPU yet; the ring-3 #NM probe needs TS set
}

void FpuPolicyInit() {
  g_probing = false;
  if (FpuPolicy() == Variant::kEager) Clts();
}

void ContextSwitch(Task* prev, Task* next) {
  Count(&KernelCounters::switches);
  FpuCpuInit();
  TickSwitchIn(next);
  GUEST_ASSERT(*prev->kstack_guard == 0x57ac6c0ffee5afe5ull);  // prev's stack did not overflow
  pv_ops.start_context_switch();
  // Kernel mappings are the same in every address space, so the new base
  // may wait in the batch until end_context_switch like the rest.
  SwitchMm(next);
  bool restore = FpuSwitchPrepare(prev, next);
  SwitchSp0(next->kstack_top, next->user);
  LoadTls(next);
  // Leave lazy mode before reloading segments: the GDT must hold next's
  // descriptors (Linux: arch_end_context_switch before loadsegment).
  pv_ops.end_context_switch();
  SwitchFs(next);
  cpu::LoadGs(next->gs_sel);
  if (restore) {
    if (FpuPolicy() != Variant::kEager) ++next->fpu_counter;
    RestoreFpu(next);
  }
  ThisCpu().current = next;
  SwitchStacks(&prev->saved_rsp, next->saved_rsp);
}

void FpuDeviceNotAvailable(bool from_user) {
  Count(&KernelCounters::nm_traps);
  if (from_user) g_ring3_nm_seen = true;
  Task* t = Current();
  if (FpuPolicy() == Variant::kEager && !g_probing)
    Panic("#NM with the eager FPU policy (CR0.TS should be clear)");
  GUEST_ASSERT(!t->has_fpu);
  CltsForNm();
  t->used_math = true;
  RestoreFpu(t);
  t->has_fpu = true;
  ++t->fpu_counter;
}

bool Ring3NmSeen() { return g_ring3_nm_seen; }

}  // namespace guest
