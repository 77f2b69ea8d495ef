#include "kernel/syscall.h"

#include "arch/cpu.h"
#include "kernel/counters.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"
#include "kernel/pipe.h"
#include "kernel/sched.h"
#include "kernel/smp.h"
#include "kernel/switch.h"
#include "kernel/syscall_abi.h"
#include "kernel/user_mem.h"
#include "lib/desc.h"

namespace guest {
namespace {

constexpr uint64_t kMaxIo = 4096;

File* FdToFile(uint64_t fd) { return fd < kMaxFds ? Current()->fds[fd] : nullptr; }

int64_t SysWrite(uint64_t fd, uint64_t buf, uint64_t len) {
  File* f = FdToFile(fd);
  if (f == nullptr || f->kind == FileKind::kPipeRead) return -kEBadf;
  if (len > kMaxIo) len = kMaxIo;
  if (!UserRangeOk(buf, len)) return -kEFault;
  return PipeWrite(f->pipe, reinterpret_cast<const uint8_t*>(buf), len);
}

int64_t SysRead(uint64_t fd, uint64_t buf, uint64_t len) {
  File* f = FdToFile(fd);
  if (f == nullptr || f->kind != FileKind::kPipeRead) return -kEBadf;
  if (len > kMaxIo) len = kMaxIo;
  if (!UserRangeOk(buf, len)) return -kEFault;
  return PipeRead(f->pipe, reinterpret_cast<uint8_t*>(buf), len);
}

int64_t SysPipe(uint64_t fds_addr) {
  if (!UserRangeOk(fds_addr, 16) || (fds_addr & 7) != 0) return -kEFault;
  File* r;
  File* w;
  NewPipe(&r, &w);
  int64_t rfd = InstallFd(Current(), r);
  if (rfd < 0) return rfd;
  int64_t wfd = InstallFd(Current(), w);
  if (wfd < 0) {
    Current()->fds[rfd] = nullptr;
    return wfd;
  }
  int64_t* out = reinterpret_cast<int64_t*>(fds_addr);
  out[0] = rfd;
  out[1] = wfd;
  return 0;
}

int64_t SysSetTls(uint64_t slot, uint64_t desc) {
  if (slot >= kTlsSlots || !IsAcceptableTlsDescriptor(desc)) return -kEInval;
  Task* t = Current();
  t->tls[slot] = desc;
  ReloadTls(t);
  return 0;
}

}  // namespace

void SelfCheckFailed(const Task* t, unsigned long id) {
  static const char* const kChecks[] = {"TLS via %fs",
                                        "TLS via %gs",
                                        "FPU/SSE registers",
                                        "system-call argument errors",
                                        "pipe data",
                                        "private pages (address space)",
                                        "cpa: pte_flags() is not the entry's flags",
                                        "cpa: pte_val() is not the page's pseudo-physical frame",
                                        "cpa: a page does not hold its tag after the walk",
                                        "shootdown: a CPU read a stale mapping",
                                        "lock: the shared counter lost increments",
                                        "migrate: the task is not on the CPU it moved to",
                                        "aim: a job of the mix got a wrong result"};
  char storage[160];
  TextBuf msg(storage, sizeof(storage));
  msg.Str("self-check failed: task ").Str(t->name).Str(" (pid ").Dec(t->pid).Str("): ");
  msg.Str(id < sizeof(kChecks) / sizeof(kChecks[0]) ? kChecks[id] : "unknown check");
  ++Kc().check_failures;
  Fatal(kExitCheckFailed, msg.View());
}

namespace {

int64_t Dispatch(uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2) {
  switch (nr) {
    case kSysWrite:
      return SysWrite(a0, a1, a2);
    case kSysRead:
      return SysRead(a0, a1, a2);
    case kSysPipe:
      return SysPipe(a0);
    case kSysYield:
      Yield();
      return 0;
    case kSysExit:
      ExitCurrent(a0);
    case kSysSetTls:
      return SysSetTls(a0, a1);
    case kSysGetPid:
      return static_cast<int64_t>(Current()->pid);
    case kSysClock:
      return static_cast<int64_t>(cpu::Rdtsc());
    case kSysCheckFail:
      SelfCheckFailed(Current(), a0);
    case kSysGetCpu:
      return CurrentCpu();
    case kSysMigrate:
      if (a0 >= NrCpus()) return -kEInval;
      MigrateCurrent(static_cast<uint32_t>(a0));
      return 0;
  }
  return -kENosys;
}

}  // namespace

void SyscallEntry(TrapFrame* f) {
  Count(&KernelCounters::syscalls);
  f->rax = static_cast<uint64_t>(Dispatch(f->rax, f->rdi, f->rsi, f->rdx));
}

}  // namespace guest
