/* The entry stub of a guest built with minivmm_add_guest() (the package's
 * MinivmmAddGuest.cmake; docs/own-guest.md), and the four functions a C
 * compiler may call even in freestanding code.
 *
 * The VMM enters _start on every vCPU in 64-bit mode with RDI = the
 * boot_info address, RSI = the CPU number and RSP = that vCPU's own stack
 * top (16-byte aligned; minivmm_abi/boot.h). RDI and RSI are already the
 * first two arguments of a C function in the x86-64 calling convention, and
 * the `call` leaves RSP 8 below a 16-byte boundary, as a function expects. */
#include <stddef.h>

#include "minivmm_guest/guest.h"

/* Shuts the VM down with mvmm_guest_main's result: a negative one or one
 * above 255 is refused, and the vCPU halts with interrupts off ("halted
 * forever", exit status 122). */
__attribute__((noreturn, used)) void mvmm_guest_start_(const struct mvmm_boot_info* boot,
                                                       uint32_t cpu) {
  mvmm_shutdown((uint64_t)(int64_t)mvmm_guest_main(boot, cpu));
}

__asm__(
    ".pushsection .text.entry, \"ax\"\n"
    ".globl _start\n"
    ".type _start, @function\n"
    "_start:\n"
    "  and $-16, %rsp\n"
    "  call mvmm_guest_start_\n"
    "  ud2\n"
    ".size _start, . - _start\n"
    ".popsection\n");

/* gcc and clang may emit calls to these for struct copies and large
 * initialisers, even with -ffreestanding. Byte loops: the guest flags
 * (-fno-tree-loop-distribute-patterns) keep the compiler from turning them
 * back into calls to themselves. Weak, so a guest may bring its own. */
__attribute__((weak)) void* memcpy(void* dst, const void* src, size_t n) {
  unsigned char* d = (unsigned char*)dst;
  const unsigned char* s = (const unsigned char*)src;
  for (size_t i = 0; i < n; ++i) d[i] = s[i];
  return dst;
}

__attribute__((weak)) void* memmove(void* dst, const void* src, size_t n) {
  unsigned char* d = (unsigned char*)dst;
  const unsigned char* s = (const unsigned char*)src;
  if (d < s) {
    for (size_t i = 0; i < n; ++i) d[i] = s[i];
  } else {
    for (size_t i = n; i > 0; --i) d[i - 1] = s[i - 1];
  }
  return dst;
}

__attribute__((weak)) void* memset(void* dst, int c, size_t n) {
  unsigned char* d = (unsigned char*)dst;
  for (size_t i = 0; i < n; ++i) d[i] = (unsigned char)c;
  return dst;
}

__attribute__((weak)) int memcmp(const void* a, const void* b, size_t n) {
  const unsigned char* x = (const unsigned char*)a;
  const unsigned char* y = (const unsigned char*)b;
  for (size_t i = 0; i < n; ++i) {
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  }
  return 0;
}
