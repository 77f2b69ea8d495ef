// Trap dispatch: exceptions, the timer interrupt, IPIs and system calls all enter
// through arch/entry.S trap_common and come here with their TrapFrame.
#include "arch/trap.h"

#include "arch/cpu.h"
#include "kernel/console.h"
#include "kernel/counters.h"
#include "kernel/fpu.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"
#include "kernel/sched.h"
#include "kernel/smp.h"
#include "kernel/syscall.h"
#include "kernel/user_mem.h"
#include "minivmm_abi/boot.h"

namespace guest {
namespace {

const char* ExceptionName(uint64_t v) {
  static const char* const kNames[] = {"#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM",
                                       "#DF", "CSO", "#TS", "#NP", "#SS", "#GP", "#PF", "reserved",
                                       "#MF", "#AC", "#MC", "#XM", "#VE", "#CP"};
  return v < sizeof(kNames) / sizeof(kNames[0]) ? kNames[v] : "reserved";
}

void PrintRegs(StrView a, uint64_t va, StrView b, uint64_t vb, StrView c, uint64_t vc, StrView d,
               uint64_t vd) {
  char storage[160];
  TextBuf line(storage, sizeof(storage));
  line.Str(a).Str("=0x").Hex(va).Char(' ').Str(b).Str("=0x").Hex(vb).Char(' ');
  line.Str(c).Str("=0x").Hex(vc).Char(' ').Str(d).Str("=0x").Hex(vd);
  ConsoleLine(line.View());
}

[[noreturn]] void UnhandledException(const TrapFrame* f) {
  char storage[200];
  TextBuf line(storage, sizeof(storage));
  line.Str("exception ")
      .Dec(f->vector)
      .Str(" (")
      .Str(ExceptionName(f->vector))
      .Str(") error=0x")
      .Hex(f->error);
  line.Str(" rip=0x").Hex(f->rip).Str(" cs=0x").Hex(f->cs).Str(" rflags=0x").Hex(f->rflags);
  line.Str(" rsp=0x").Hex(f->rsp);
  if (f->vector == kVectorPf) line.Str(" cr2=0x").Hex(cpu::ReadCr2());
  ConsoleLine(line.View());
  PrintRegs("rax", f->rax, "rbx", f->rbx, "rcx", f->rcx, "rdx", f->rdx);
  PrintRegs("rsi", f->rsi, "rdi", f->rdi, "rbp", f->rbp, "r8", f->r8);
  PrintRegs("r9", f->r9, "r10", f->r10, "r11", f->r11, "r12", f->r12);
  PrintRegs("r13", f->r13, "r14", f->r14, "r15", f->r15, "ss", f->ss);
  Shutdown(kExitException);
}

// docs/hosts.md: on the software-KVM hosts `int 0x80` from ring 3 raises #UD
// at the instruction instead of reaching its gate. Recognise its two bytes
// (CD 80) in user memory and take the same system-call path.
bool IsInt80(const TrapFrame* f) {
  if (!f->FromUser() || !UserRangeOk(f->rip, 2)) return false;
  const uint8_t* p = reinterpret_cast<const uint8_t*>(f->rip);
  return p[0] == 0xCD && p[1] == 0x80;
}

}  // namespace

}  // namespace guest

using namespace guest;

extern "C" void TrapDispatch(TrapFrame* f) {
  if (!f->FromUser() && (f->vector == MVMM_TIMER_VECTOR || f->vector == MVMM_IPI_VECTOR))
    RestartIdleWindow(f);
  switch (f->vector) {
    case MVMM_TIMER_VECTOR:
      TimerInterrupt(f);
      break;
    case MVMM_IPI_VECTOR:
      IpiInterrupt();
      break;
    case kVectorSyscall:
      SyscallEntry(f);
      break;
    case kVectorUd:
      if (!IsInt80(f)) UnhandledException(f);
      f->rip += 2;  // as if the gate had been taken: resume after `int 0x80`
      Count(&KernelCounters::syscall_ud_fallbacks);
      SyscallEntry(f);
      break;
    case kVectorNm:
      FpuDeviceNotAvailable(f->FromUser());
      break;
    default:
      UnhandledException(f);
  }
  if (f->FromUser()) ReturnToUserWork();
}
