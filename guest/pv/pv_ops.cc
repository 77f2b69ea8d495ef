#include "pv/pv_ops.h"

#include "kernel/boot.h"
#include "kernel/panic.h"

extern "C" const uint64_t __parainstructions_start[], __parainstructions_end[];

namespace guest {

PvOps pv_ops;

namespace {
Variant g_variant[kPvOpCount];
bool g_irq_shared = false;
}  // namespace

void PvOpsInit(const Config& config) {
  pv_ops = config.backend == Backend::kPv ? kParavirtPvOps : kNativePvOps;
  for (int i = 0; i < kPvOpCount; ++i) g_variant[i] = config.variant[i];
  // The command-line parser refuses irq:shared with backend=native.
  g_irq_shared = config.backend == Backend::kPv && config.Get(PvOp::kIrq) == Variant::kShared;
  if (g_irq_shared) PvSharedIrqInit(&pv_ops, g_boot.vcpu_info_gpa);
}

bool PvIrqShared() { return g_irq_shared; }

Variant PvVariant(PvOp op) { return g_variant[static_cast<int>(op)]; }

void ArchIrqRestore(uint64_t flags) {
  bool enable = (flags & (1ull << 9)) != 0;
  if (enable) {
    ++g_kc.irq_restores_if_set;
  } else {
    ++g_kc.irq_restores_if_clear;
  }
  if (g_variant[static_cast<int>(PvOp::kIrqRestore)] == Variant::kNaive) {
    // Linux before 2017: every restore goes to the backend, even when it
    // leaves interrupts disabled.
    pv_ops.restore_fl(flags);
  } else if (enable) {
    // `if (f & X86_EFLAGS_IF) arch_local_irq_enable();` (counted as a
    // restore with IF set, not in irq_enables)
    pv_ops.irq_enable();
  }
}

uint64_t PvPatchCallSites() {
  // Each record: {address, length}. The site is `call *pv_ops.pte_val`
  // (6 or 7 bytes); the native form is `mov %rdi,%rax` (3 bytes) padded with
  // single-byte nops. The kernel text is mapped writable by our own tables.
  uint64_t n = 0;
  for (const uint64_t* rec = __parainstructions_start; rec + 1 < __parainstructions_end; rec += 2) {
    uint8_t* site = reinterpret_cast<uint8_t*>(rec[0]);
    uint64_t len = rec[1];
    GUEST_ASSERT(len >= 3 && len <= 16);
    site[0] = 0x48;
    site[1] = 0x89;
    site[2] = 0xf8;
    for (uint64_t i = 3; i < len; ++i) site[i] = 0x90;
    ++n;
  }
  return n;
}

}  // namespace guest

// The C body behind PteValCalleeThunk (arch/entry.S). pte values are
// guest-physical on both backends (no pseudo-physical translation here).
extern "C" uint64_t PteValC(uint64_t pte) { return pte; }
