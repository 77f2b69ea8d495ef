// System-call numbers and errors shared by the kernel and ring-3 code.
// Entry: `int $0x80` with the number in RAX, arguments in RDI, RSI, RDX;
// the result (>= 0, or -errno) comes back in RAX; other registers survive.
#ifndef GUEST_KERNEL_SYSCALL_ABI_H_
#define GUEST_KERNEL_SYSCALL_ABI_H_

namespace guest {

enum SyscallNr : unsigned long {
  kSysWrite = 0,      // write(fd, buf, len) -> bytes written
  kSysRead = 1,       // read(fd, buf, len) -> bytes read, 0 at end of file
  kSysPipe = 2,       // pipe(int64 fds[2]) -> 0; fds[0] reads, fds[1] writes
  kSysYield = 3,      // yield() -> 0
  kSysExit = 4,       // exit(value): never returns
  kSysSetTls = 5,     // set_tls(slot 0..2, descriptor) -> 0
  kSysGetPid = 6,     // getpid() -> pid
  kSysClock = 7,      // clock() -> TSC
  kSysCheckFail = 8,  // check_fail(check id): a self-check failed; shuts down with 1
  kSysGetCpu = 9,     // getcpu() -> the CPU the caller runs on
  kSysMigrate = 10,   // migrate(cpu) -> 0 once running there; -EINVAL for no such CPU
  kSysCount = 11,
};

// Errors (Linux numbers), returned negated.
inline constexpr long kEBadf = 9;
inline constexpr long kEFault = 14;
inline constexpr long kEInval = 22;
inline constexpr long kEMfile = 24;
inline constexpr long kENosys = 38;

// Self-check ids for kSysCheckFail (the message names them).
enum CheckId : unsigned long {
  kCheckTlsFs = 0,
  kCheckTlsGs = 1,
  kCheckFpu = 2,
  kCheckSyscallErrors = 3,
  kCheckPipeData = 4,
  kCheckAddressSpace = 5,
  kCheckPteFlags = 6,
  kCheckPteVal = 7,
  kCheckPageData = 8,
  kCheckShootdown = 9,
  kCheckLock = 10,
  kCheckMigrate = 11,
  kCheckMix = 12,
};

}  // namespace guest

#endif  // GUEST_KERNEL_SYSCALL_ABI_H_
