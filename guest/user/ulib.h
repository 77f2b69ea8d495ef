// Ring-3 helpers. Code that runs in ring 3 may only touch the .user_*
// sections and the user arena: put every ring-3 function in USER_TEXT,
// keep these helpers always_inline, and use no string literals or library
// calls (they would live in kernel pages and fault).
#ifndef GUEST_USER_ULIB_H_
#define GUEST_USER_ULIB_H_

#include <stdint.h>

#include "kernel/syscall_abi.h"

#define USER_TEXT __attribute__((section(".user_text"), noinline))
#define USER_INLINE __attribute__((always_inline)) inline

namespace guest::user {

USER_INLINE int64_t Syscall(uint64_t nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0) {
  uint64_t rax = nr;
  // docs/hosts.md: on some hosts this raises #UD, which the kernel turns
  // into the same system call; every other register survives either way.
  asm volatile("int $0x80" : "+a"(rax) : "D"(a0), "S"(a1), "d"(a2) : "memory");
  return static_cast<int64_t>(rax);
}

USER_INLINE int64_t Read(int64_t fd, void* buf, uint64_t len) {
  return Syscall(kSysRead, static_cast<uint64_t>(fd), reinterpret_cast<uint64_t>(buf), len);
}
USER_INLINE int64_t Write(int64_t fd, const void* buf, uint64_t len) {
  return Syscall(kSysWrite, static_cast<uint64_t>(fd), reinterpret_cast<uint64_t>(buf), len);
}
[[noreturn]] USER_INLINE void Exit(uint64_t value) {
  Syscall(kSysExit, value);
  for (;;) {
  }
}
USER_INLINE void CheckFail(uint64_t id) { Syscall(kSysCheckFail, id); }

// After `done` of `total` passes: is it time to move to the next CPU, every
// `every` passes (0: never) on a machine of `cpus`? Never after the last.
USER_INLINE bool MoveDue(uint64_t done, uint64_t total, uint64_t every, uint64_t cpus) {
  return every != 0 && cpus > 1 && done % every == 0 && done < total;
}
// Moves the caller to the next CPU; true when it then runs there.
USER_INLINE bool MoveToNextCpu(uint64_t cpus) {
  const uint64_t to = (static_cast<uint64_t>(Syscall(kSysGetCpu)) + 1) % cpus;
  return Syscall(kSysMigrate, to) == 0 && static_cast<uint64_t>(Syscall(kSysGetCpu)) == to;
}

USER_INLINE uint64_t ReadFs0() {
  uint64_t v;
  asm volatile("movq %%fs:0, %0" : "=r"(v));
  return v;
}
USER_INLINE uint64_t ReadGs0() {
  uint64_t v;
  asm volatile("movq %%gs:0, %0" : "=r"(v));
  return v;
}

}  // namespace guest::user

// arch/entry.S, in .user_text: xmm0-7 from/to 128 bytes.
extern "C" void UserSseLoad8(const void* src);
extern "C" void UserSseStore8(void* dst);

#endif  // GUEST_USER_ULIB_H_
