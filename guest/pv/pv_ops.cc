#include "pv/pv_ops.h"

#include "kernel/boot.h"
#include "kernel/hypercall.h"
#include "kernel/mem.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"
#include "kernel/smp.h"
#include "kernel/spinlock.h"
#include "minivmm_abi/hypercall.h"

extern "C" const uint64_t __parainstructions_start[], __parainstructions_end[];

namespace guest {

constinit PvOps pv_ops{};
Physmap g_pv_physmap;

namespace {
Variant g_variant[kPvOpCount];
bool g_irq_shared = false;
bool g_pv_backend = false;

// ---- The policy group's variants.

// Linux before 2017: every restore goes to the backend, even one that
// leaves interrupts disabled.
void IrqRestoreAlways(uint64_t flags) { pv_ops.restore_fl(flags); }
// `if (f & X86_EFLAGS_IF) arch_local_irq_enable();` (counted as a restore
// with IF set, not in irq_enables).
void IrqRestoreIfEnabling(uint64_t flags) {
  if ((flags & (1ull << 9)) != 0) pv_ops.irq_enable();
}

void SendIpiEach(uint64_t mask) {
  for (uint64_t rest = mask; rest != 0; rest &= rest - 1) pv_ops.send_ipi(rest & -rest);
}
void SendIpiAll(uint64_t mask) { pv_ops.send_ipi(mask); }

void FlushTlbByIpi(uint64_t mask) { SmpFlushOthersByIpi(mask); }
void FlushTlbByHypercall(uint64_t mask) {
  Count(&KernelCounters::tlb_flushes_kicked, pv_ops.flush_tlb_others(mask));
}

// Generic mm before Linux 2.6.26: ptep_get_and_clear, then set_pte_at.
void ModifyPteClearFirst(uint64_t* ptep, uint64_t val) {
  SetPte(ptep, 0);
  SetPte(ptep, val);
}
// Xen's ptep_modify_prot_commit: the new entry in one update.
void ModifyPteOnce(uint64_t* ptep, uint64_t val) { SetPte(ptep, val); }

// Linux's __switch_to (update_task_stack): every switch loads next's stack.
void Sp0Always(uint64_t sp0, bool /*user*/) { LoadSp0(sp0); }
// Only an entry from ring 3 reads TSS.rsp0, and a kernel thread makes none:
// its switch leaves the previous task's stack there.
void Sp0ForUserTasks(uint64_t sp0, bool user) {
  if (user) LoadSp0(sp0);
}

// ---- The lock group: the same hypercalls under both backends (minivmm's
// lock_wait and lock_kick are its pv spinlock ABI, as KVM's are
// kvm_wait's hlt and KVM_HC_KICK_CPU).

int64_t LockWait(const uint32_t* word, uint32_t value) {
  return Hypercall(MVMM_HC_lock_wait, reinterpret_cast<uint64_t>(word), value);
}
void LockKick(uint32_t cpu) {
  const int64_t r = Hypercall(MVMM_HC_lock_kick, cpu);
  GUEST_ASSERT(r == 0);
}
void YieldPlain(uint32_t /*owner*/, uint32_t /*me*/) {
  const int64_t r = Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD);
  GUEST_ASSERT(r == 0);
}
// A plain yield when no holder's number is there (read while another CPU
// had just taken the lock and not yet written it).
void YieldDirected(uint32_t owner, uint32_t me) {
  if (owner == me || owner >= MVMM_MAX_CPUS) return YieldPlain(owner, me);
  const int64_t r = Hypercall(MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD_TO, owner);
  GUEST_ASSERT(r == 0);
}

bool Naive(const Config& config, PvOp op) { return config.Get(op) == Variant::kNaive; }

}  // namespace

void PvOpsInit(const Config& config) {
  g_pv_backend = config.backend == Backend::kPv;
  pv_ops = g_pv_backend ? kParavirtPvOps : kNativePvOps;
  for (int i = 0; i < kPvOpCount; ++i) g_variant[i] = config.variant[i];
  pv_ops.irq_restore = Naive(config, PvOp::kIrqRestore) ? IrqRestoreAlways : IrqRestoreIfEnabling;
  pv_ops.send_ipi_mask = Naive(config, PvOp::kSendIpi) ? SendIpiEach : SendIpiAll;
  pv_ops.flush_tlb_mask = Naive(config, PvOp::kFlushTlb) ? FlushTlbByIpi : FlushTlbByHypercall;
  pv_ops.modify_pte = Naive(config, PvOp::kPteModify) ? ModifyPteClearFirst : ModifyPteOnce;
  pv_ops.switch_sp0 = Naive(config, PvOp::kSp0) ? Sp0Always : Sp0ForUserTasks;
  pv_ops.lock_slowpath =
      Naive(config, PvOp::kSpinlock) ? SpinLock::SpinSlowPath : SpinLock::SleepSlowPath;
  pv_ops.lock_wait = LockWait;
  pv_ops.lock_kick = LockKick;
  pv_ops.yield = Naive(config, PvOp::kYield) ? YieldPlain : YieldDirected;
  // The command-line parser refuses irq:shared with backend=native.
  g_irq_shared = config.backend == Backend::kPv && config.Get(PvOp::kIrq) == Variant::kShared;
  if (g_irq_shared) PvSharedIrqInit(&pv_ops, g_boot.vcpu_info_gpa);
}

bool PvIrqShared() { return g_irq_shared; }

void PvPhysmapInit(uint64_t pool_pa, uint64_t* pt) {
  if (!g_pv_backend) return;
  GUEST_ASSERT(pool_pa % (kPhysmapPoolPages * kPageSize) == 0);
  PhysmapInit(&g_pv_physmap, pool_pa / kPageSize);
  for (uint64_t i = 0; i < kPhysmapPoolPages; ++i) pt[i] = PhysmapMakePte(g_pv_physmap, pt[i]);
}

Variant PvVariant(PvOp op) { return g_variant[static_cast<int>(op)]; }

void ArchIrqRestore(uint64_t flags) {
  if ((flags & (1ull << 9)) != 0) {
    Count(&KernelCounters::irq_restores_if_set);
  } else {
    Count(&KernelCounters::irq_restores_if_clear);
  }
  pv_ops.irq_restore(flags);
}

void SendIpiMask(uint64_t mask) {
  if (mask == 0) return;
  Count(&KernelCounters::ipis_sent, static_cast<uint64_t>(__builtin_popcountll(mask)));
  pv_ops.send_ipi_mask(mask);
}

void FlushTlbOthers(uint64_t mask) {
  if (mask == 0) return;
  Count(&KernelCounters::tlb_shootdowns);
  Count(&KernelCounters::tlb_flush_targets, static_cast<uint64_t>(__builtin_popcountll(mask)));
  pv_ops.flush_tlb_mask(mask);
}

namespace {

// The flags of an entry, as a word in memory: the inline pte_val below masks
// with it (x86 has no 64-bit immediate for `and`).
const uint64_t kFlagsMaskWord = kPteFlagsMask;

struct SiteTemplate {
  const uint8_t* start;
  const uint8_t* end;
};

// The inline forms of pte_val a site is patched to, assembled into .rodata
// (copied, never run in place): they use absolute addresses only, no
// RIP-relative ones, and clobber only RAX and the flags, as the call did.
// - native: `mov %rdi,%rax`, the identity;
// - pv: Xen's pte_mfn_to_pfn: a not-present entry as is; otherwise counts
//   the lookup in m2p_lookups (CPU 0's counter, with a locked add: the
//   inline form has no per-CPU address) and replaces the frame by its m2p entry when
//   it lies in the pool (PhysmapPteVal), saving RDX around it.
// (noclone: the labels are defined once.)
// The patched pv form's count of its m2p lookup, as XenPteValC's (none in
// the uncounted kernel).
#if GUEST_COUNTERS
#define GUEST_M2P_COUNT_ASM "   lock incq %c[count]\n"
#else
#define GUEST_M2P_COUNT_ASM ""
#endif
__attribute__((noinline, noclone)) void PteValTemplates(SiteTemplate* native, SiteTemplate* pv) {
  const uint8_t *native_start, *native_end, *pv_start, *pv_end;
  asm(".pushsection .rodata.pte_val_templates,\"a\"\n"
      "1: mov %%rdi, %%rax\n"
      "2:\n"
      "3: mov %%rdi, %%rax\n"
      "   test $1, %%al\n"
      "   jz 9f\n" GUEST_M2P_COUNT_ASM
      "   push %%rdx\n"
      "   mov %%rdi, %%rdx\n"
      "   shl $12, %%rdx\n"
      "   shr $24, %%rdx\n"        // rdx = mfn
      "   sub %c[first], %%rdx\n"  // rdx = its pool index (huge if below)
      "   cmp $%c[pages] - 1, %%rdx\n"
      "   ja 8f\n"  // outside the pool: mfn == pfn, keep the entry
      "   mov %c[m2p](,%%rdx,8), %%rdx\n"
      "   and %c[mask], %%rax\n"
      "   shl $12, %%rdx\n"
      "   or %%rdx, %%rax\n"
      "8: pop %%rdx\n"
      "9:\n"
      ".popsection\n"
      "lea 1b(%%rip), %[ns]\n"
      "lea 2b(%%rip), %[ne]\n"
      "lea 3b(%%rip), %[ps]\n"
      "lea 9b(%%rip), %[pe]\n"
      : [ns] "=r"(native_start), [ne] "=r"(native_end), [ps] "=r"(pv_start), [pe] "=r"(pv_end)
      : [count] "i"(&g_cpus[0].kc.m2p_lookups), [first] "i"(&g_pv_physmap.pool_first),
        [m2p] "i"(&g_pv_physmap.m2p[0]), [mask] "i"(&kFlagsMaskWord),
        [pages] "i"(kPhysmapPoolPages));
  *native = {native_start, native_end};
  *pv = {pv_start, pv_end};
}

}  // namespace

uint64_t PvPatchCallSites() {
  // Each record: {address, length}. The site is `call *pv_ops.pte_val`, a
  // short jump to its end and padding (kPteValSiteBytes in all); it becomes
  // the backend's inline pte_val, then a short jump over what is left. The
  // kernel text is mapped writable by our own tables.
  SiteTemplate native, pv;
  PteValTemplates(&native, &pv);
  const SiteTemplate& t = g_pv_backend ? pv : native;
  uint64_t tlen = static_cast<uint64_t>(t.end - t.start);
  uint64_t n = 0;
  for (const uint64_t* rec = __parainstructions_start; rec + 1 < __parainstructions_end; rec += 2) {
    uint8_t* site = reinterpret_cast<uint8_t*>(rec[0]);
    uint64_t len = rec[1];
    GUEST_ASSERT(len == kPteValSiteBytes && tlen + 2 <= len);
    void* dst = site;
    const void* src = t.start;
    uint64_t count = tlen;
    asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(count) : : "memory");
    site[tlen] = 0xeb;  // jmp to the end of the site
    site[tlen + 1] = static_cast<uint8_t>(len - tlen - 2);
    ++n;
  }
  return n;
}

}  // namespace guest

// The C body behind PteValCalleeThunk (arch/entry.S), the native pte_val:
// entries hold the frames the kernel uses (no translation, as on bare
// metal).
extern "C" uint64_t PteValC(uint64_t pte) { return pte; }
