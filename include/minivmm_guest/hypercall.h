/* Hypercalls for a guest of your own (docs/own-guest.md): inline wrappers
 * over the transport of minivmm_abi/hypercall.h, for C (and C++) compiled
 * freestanding. Header-only; nothing here touches memory except what a
 * caller passes.
 *
 * One wrapper call is one `out %eax, $MVMM_HYPERCALL_PORT`, hence exactly one
 * VM exit, counted by the VMM under that hypercall's name: the number in
 * EAX, the arguments in RDI, RSI, RDX, R10, R8, the result in RAX (>= 0 on
 * success, a negative MVMM_E* errno on failure). The guest runs identity
 * mapped, so a pointer's value is the guest-physical address the VMM reads. */
#ifndef MINIVMM_GUEST_HYPERCALL_H_
#define MINIVMM_GUEST_HYPERCALL_H_

#include <stddef.h>
#include <stdint.h>

#include "minivmm_abi/hypercall.h"

/* Hypercall `nr` with all five argument registers set (unused ones 0). */
static inline int64_t mvmm_hypercall(uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2,
                                     uint64_t a3, uint64_t a4) {
  uint64_t rax = nr;
  register uint64_t r10 __asm__("r10") = a3;
  register uint64_t r8 __asm__("r8") = a4;
  /* "memory": the VMM may read or write guest memory the arguments name. */
  __asm__ volatile("outl %%eax, %[port]"
                   : "+a"(rax)
                   : [port] "i"(MVMM_HYPERCALL_PORT), "D"(a0), "S"(a1), "d"(a2), "r"(r10), "r"(r8)
                   : "memory");
  return (int64_t)rax;
}

static inline int64_t mvmm_hypercall0(uint64_t nr) { return mvmm_hypercall(nr, 0, 0, 0, 0, 0); }
static inline int64_t mvmm_hypercall1(uint64_t nr, uint64_t a0) {
  return mvmm_hypercall(nr, a0, 0, 0, 0, 0);
}
static inline int64_t mvmm_hypercall2(uint64_t nr, uint64_t a0, uint64_t a1) {
  return mvmm_hypercall(nr, a0, a1, 0, 0, 0);
}
static inline int64_t mvmm_hypercall3(uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2) {
  return mvmm_hypercall(nr, a0, a1, a2, 0, 0);
}

/* console_io(write, len, buf): the `len` bytes at `buf` to the VMM's console
 * (`minivmm run` prints them on stdout). One exit; returns `len`, or
 * -MVMM_E2BIG for len > MVMM_CONSOLEIO_MAX_BYTES (nothing written). */
static inline int64_t mvmm_console_write(const void* buf, size_t len) {
  return mvmm_hypercall3(MVMM_HC_console_io, MVMM_CONSOLEIO_WRITE, len, (uint64_t)(uintptr_t)buf);
}

/* console_io of the NUL-terminated `s` (one exit, as mvmm_console_write). */
static inline int64_t mvmm_console_print(const char* s) {
  size_t len = 0;
  while (s[len] != '\0') ++len;
  return mvmm_console_write(s, len);
}

/* sched_op(yield): gives the host thread up (counted under cause `yield`).
 * Returns 0. */
static inline int64_t mvmm_yield(void) {
  return mvmm_hypercall2(MVMM_HC_sched_op, MVMM_SCHEDOP_YIELD, 0);
}

/* sched_op(shutdown, code): stops the whole VM with exit code `code`, which
 * `minivmm run` exits with. Does not return; a code above 255 is refused
 * (-EINVAL) and the vCPU then halts with interrupts off, which stops the run
 * as "halted forever" (exit status 122). */
__attribute__((noreturn)) static inline void mvmm_shutdown(uint64_t code) {
  mvmm_hypercall2(MVMM_HC_sched_op, MVMM_SCHEDOP_SHUTDOWN, code);
  for (;;) __asm__ volatile("cli; hlt");
}

#endif /* MINIVMM_GUEST_HYPERCALL_H_ */
