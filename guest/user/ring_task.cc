#include "user/ring_task.h"

#include "lib/desc.h"
#include "user/ulib.h"

namespace guest {
namespace {

using namespace user;

constexpr uint64_t kUserPageSize = 4096;

// The value line `off` of the working set holds: unique per task and line.
USER_INLINE uint64_t LineValue(const RingTaskArgs* a, uint64_t off) { return a->private_tag ^ off; }

// Writes every 64-byte line of the working set once.
USER_INLINE void FillWorkingSet(RingTaskArgs* a) {
  volatile uint64_t* ws = reinterpret_cast<volatile uint64_t*>(a->private_va + kUserPageSize);
  for (uint64_t off = 0; off < a->ws_bytes; off += 64) ws[off / 8] = LineValue(a, off);
}

// lat_ctx's per-pass touch: reads every line of the working set, and checks
// that the private pages are this task's own. Tasks in separate address
// spaces use the same virtual address, so a stale CR3 shows up here.
USER_INLINE void TouchPrivatePages(RingTaskArgs* a) {
  const volatile uint64_t* p = reinterpret_cast<const volatile uint64_t*>(a->private_va);
  if (*p != a->private_tag) CheckFail(kCheckAddressSpace);
  const volatile uint64_t* ws = p + kUserPageSize / 8;
  for (uint64_t off = 0; off < a->ws_bytes; off += 64) {
    if (ws[off / 8] != LineValue(a, off)) CheckFail(kCheckAddressSpace);
  }
  ++a->checks;
}

USER_INLINE void CheckState(RingTaskArgs* a) {
  TouchPrivatePages(a);
  if (ReadFs0() != a->fs_expect) CheckFail(kCheckTlsFs);
  if (ReadGs0() != a->gs_expect) CheckFail(kCheckTlsGs);
  a->checks += 2;
  if (a->fpu) {
    UserSseStore8(a->scratch);
    for (int i = 0; i < 128; ++i) {
      if (a->scratch[i] != a->pattern[i]) CheckFail(kCheckFpu);
    }
    ++a->checks;
  }
}

// Bad arguments get errors, never a kernel crash.
USER_INLINE void ProbeErrors(RingTaskArgs* a) {
  uint8_t byte = 0;
  bool ok = Read(99, &byte, 1) == -kEBadf;
  ok = ok && Read(a->in_fd, reinterpret_cast<void*>(0x100000), 1) == -kEFault;  // kernel text
  ok = ok && Syscall(kSysSetTls, 5, 0) == -kEInval;
  ok = ok && Syscall(kSysSetTls, 0, 0x00af9b000000ffffull) == -kEInval;  // a ring-0 code segment
  ok = ok && Syscall(1234) == -kENosys;
  if (!ok) CheckFail(kCheckSyscallErrors);
  ++a->checks;
}

// Moves to the next CPU and checks that it runs there; the caller then
// checks its TLS and FPU state (CheckState), which the new CPU's context
// switch loaded.
USER_INLINE void MigrateToNextCpu(RingTaskArgs* a) {
  if (!MoveToNextCpu(a->cpus)) CheckFail(kCheckMigrate);
  ++a->checks;
}

}  // namespace

extern "C" USER_TEXT void RingTaskMain(RingTaskArgs* a) {
  if (a->probe_errors) ProbeErrors(a);
  FillWorkingSet(a);
  if (a->fpu) UserSseLoad8(a->pattern);
  CheckState(a);
  for (uint64_t r = 0; r < a->rounds; ++r) {
    uint8_t token = static_cast<uint8_t>(r);
    uint8_t got = 0;
    if (a->starter) {
      Write(a->out_fd, &token, 1);
      Read(a->in_fd, &got, 1);
    } else {
      Read(a->in_fd, &got, 1);
      Write(a->out_fd, &got, 1);
    }
    if (got != token) CheckFail(kCheckPipeData);
    CheckState(a);
    if (MoveDue(r + 1, a->rounds, a->migrate, a->cpus)) {
      MigrateToNextCpu(a);
      CheckState(a);
    }
  }
  Exit(a->checks);
}

extern "C" USER_TEXT void FpuProbeMain(uint64_t) {
  // With CR0.TS set this raises #NM where the host enforces TS in ring 3.
  // Where it does not, the VMM still sees the use: xmm1 goes from its boot
  // zero to all ones (docs/wasted-exits.md).
  asm volatile("pcmpeqd %%xmm1, %%xmm1" ::: "memory");
  Exit(0);
}

}  // namespace guest
