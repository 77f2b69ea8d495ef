/* Hypercalls made with a corrupt frame-pointer chain in RBP, for the exit
 * sites' walker (docs/sites.md): case K (K = 1..11) makes K console_io
 * writes of 0 bytes from one `out`, so that a site's exit count says which
 * case it is. Return addresses are made-up values; the walker only reads
 * them. Then shutdown(0).
 *   1  RBP 0                            the RIP alone
 *   2  non-canonical                    the RIP alone
 *   3  misaligned (a good frame + 4)    the RIP alone
 *   4  canonical, far outside RAM       the RIP alone
 *   5  the last 8 bytes of RAM (a frame straddles its end)    the RIP alone
 *   6  a frame that points at itself    RIP, 0x1111
 *   7  two frames that point at each other    RIP, 0x2221, 0x2222
 *   8  a clean chain of two ending in RBP 0   RIP, 0x4440, 0x4441
 *   9  a frame whose return address is 0      the RIP alone
 *  10  a frame whose saved RBP is outside RAM RIP, 0x5551
 *  11  an ascending chain of 40 frames  RIP and the first 31 (0x3000 + i)
 * RAM's size is read from the boot info (MVMM_BOOT_INFO_GPA 0x1000,
 * memory_size at offset 8). */
#include "tiny.h"
#define CHAIN 40

/* Makes COUNT console_io hypercalls from one `out` with RBP as it is. */
#define WRITES(count)    \
  mov $(count), %r12d;   \
  1: xor %edi, %edi;     \
  xor %esi, %esi;        \
  xor %edx, %edx;        \
  HYPERCALL(18);         \
  dec %r12d;             \
  jnz 1b

.globl _start
_start:
  /* The frames: [saved RBP, return address] each. */
  lea self(%rip), %rax
  mov %rax, self(%rip)
  movq $0x1111, self+8(%rip)
  lea pair_a(%rip), %rax
  lea pair_b(%rip), %rbx
  mov %rbx, (%rax)
  movq $0x2221, 8(%rax)
  mov %rax, (%rbx)
  movq $0x2222, 8(%rbx)
  lea clean(%rip), %rax
  lea 16(%rax), %rbx
  mov %rbx, (%rax)
  movq $0x4440, 8(%rax)
  movq $0, (%rbx)
  movq $0x4441, 8(%rbx)
  lea zero_ret(%rip), %rax
  lea 16(%rax), %rbx
  mov %rbx, (%rax)
  movq $0, 8(%rax)
  movabs $0x400000000000, %rax
  mov %rax, far_next(%rip)
  movq $0x5551, far_next+8(%rip)
  lea chain(%rip), %rax
  mov $0x3000, %ecx
2:
  lea 16(%rax), %rbx
  mov %rbx, (%rax)
  mov %rcx, 8(%rax)
  mov %rbx, %rax
  inc %ecx
  cmp $0x3000 + CHAIN, %ecx
  jne 2b
  movq $0, -16(%rax)

  xor %ebp, %ebp
  WRITES(1)
  movabs $0x8000000000000000, %rbp
  WRITES(2)
  lea clean+4(%rip), %rbp
  WRITES(3)
  movabs $0x400000000000, %rbp
  WRITES(4)
  mov 0x1008, %rbp
  sub $8, %rbp
  WRITES(5)
  lea self(%rip), %rbp
  WRITES(6)
  lea pair_a(%rip), %rbp
  WRITES(7)
  lea clean(%rip), %rbp
  WRITES(8)
  lea zero_ret(%rip), %rbp
  WRITES(9)
  lea far_next(%rip), %rbp
  WRITES(10)
  lea chain(%rip), %rbp
  WRITES(11)
  SHUTDOWN(0)

.data
.balign 16
self: .quad 0, 0
pair_a: .quad 0, 0
pair_b: .quad 0, 0
clean: .quad 0, 0, 0, 0
zero_ret: .quad 0, 0, 0, 0
far_next: .quad 0, 0
chain: .fill 2 * CHAIN, 8, 0
