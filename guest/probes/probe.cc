#include "probes/probe.h"

#include "arch/cpu.h"
#include "kernel/boot.h"
#include "kernel/console.h"
#include "kernel/counters.h"
#include "kernel/hypercall.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"
#include "workloads/workload.h"

namespace guest {

void AppendResult(int64_t v, TextBuf* out) {
  out->SDec(v);
  const char* name = nullptr;
  switch (-v) {
    case MVMM_EPERM:
      name = "EPERM";
      break;
    case MVMM_ENOENT:
      name = "ENOENT";
      break;
    case MVMM_E2BIG:
      name = "E2BIG";
      break;
    case MVMM_EFAULT:
      name = "EFAULT";
      break;
    case MVMM_EINVAL:
      name = "EINVAL";
      break;
    case MVMM_ENOSYS:
      name = "ENOSYS";
      break;
  }
  if (name != nullptr) out->Str(" (").Str(name).Str(")");
}

int64_t Prober::Call(const char* what, uint64_t tag, int64_t want, uint64_t nr, uint64_t a0,
                     uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) {
  int64_t rc = Hypercall(nr, a0, a1, a2, a3, a4);
  Expect(what, tag, rc, want);
  return rc;
}

bool Prober::Expect(const char* what, uint64_t tag, int64_t got, int64_t want) {
  ++checks_;
  if (got == want) return true;
  ++failures_;
  char storage[200];
  TextBuf msg(storage, sizeof(storage));
  msg.Str(workload_).Str(": ").Str(what);
  if (tag != kNoTag) msg.Str(" #").Dec(tag);
  msg.Str(": expected ");
  AppendResult(want, &msg);
  msg.Str(", got ");
  AppendResult(got, &msg);
  if (mode_ == Mode::kStopAtFirst) {
    ++Kc().check_failures;
    Fatal(kExitCheckFailed, msg.View());
  }
  ConsoleLine(msg.View());
  return false;
}

void PutHypercallDeltas(WorkloadRecord* rec, const HypercallCounts& before) {
  char storage[48];
#define GUEST_HC_DELTA_(n, name)                                                          \
  {                                                                                       \
    TextBuf key(storage, sizeof(storage));                                                \
    rec->Put(key.Clear().Str(#name ".calls").View(), Hc().exits[n] - before.exits[n]);    \
    rec->Put(key.Clear().Str(#name ".ops").View(), Hc().ops[n] - before.ops[n]);          \
    rec->Put(key.Clear().Str(#name ".errors").View(), Hc().errors[n] - before.errors[n]); \
  }
  MVMM_HYPERCALL_LIST(GUEST_HC_DELTA_)
#undef GUEST_HC_DELTA_
  rec->Put("bad_number", Hc().bad_number - before.bad_number);
}

namespace probe {

uint64_t GdtEntryGpa(uint64_t slot) { return g_boot.gdt_gpa + 8 * slot; }

uint64_t ReadGdt(uint64_t slot) {
  return *reinterpret_cast<const volatile uint64_t*>(GdtEntryGpa(slot));
}

uint64_t CurrentIf() { return (cpu::SaveFlags() & cpu::kRflagsIf) ? 1 : 0; }

uint64_t ClearIf() {
  const uint64_t rflags = cpu::SaveFlags();
  cpu::Cli();
  return rflags;
}

void RestoreIf(uint64_t rflags) { cpu::RestoreFlags(rflags); }

}  // namespace probe

}  // namespace guest
