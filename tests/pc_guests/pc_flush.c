/* pc-testdev's flush-page port from the inside, for --kernel-exits: N
   times, flush one page of its own (outl of its address to 0xe4) and then
   write to it once (flush_touch); N times more, write to another page that
   is never flushed (plain_touch). A flush makes the host drop its mapping
   of the page and with it KVM's (QEMU's mprotect; MappedMemory::
   InvalidateHostPage), so on a host with two-dimensional paging each
   flush_touch is one nested page fault that KVM handles in the kernel, and
   no plain_touch is. Both pages are written once first, so that each is
   mapped before the loops, and they lie in different 2 MiB regions: KVM
   may map guest memory with 2 MiB entries, and a flush drops the whole
   entry that holds the page (a page beside the flushed one faults too). It prints N and the two
   instructions' addresses; without pc-testdev the port is unclaimed and nothing is flushed. */
#include "pc_guest.h"

#define N 32
#define FLUSH_PORT 0xe4

#define REGION (2u << 20)
static volatile uint32_t flushed_page[1024] __attribute__((aligned(REGION)));
static volatile uint32_t plain_page[1024] __attribute__((aligned(REGION)));
extern const char flush_touch[], plain_touch[];

static __attribute__((noinline)) void flush_loop(void) {
  for (uint32_t i = 0; i < N; ++i) {
    outl(FLUSH_PORT, (uint32_t)flushed_page);
    __asm__ volatile(".globl flush_touch\nflush_touch: movl %1, %0"
                     : "=m"(flushed_page[0])
                     : "r"(i)
                     : "memory");
  }
}

static __attribute__((noinline)) void plain_loop(void) {
  for (uint32_t i = 0; i < N; ++i) {
    __asm__ volatile(".globl plain_touch\nplain_touch: movl %1, %0"
                     : "=m"(plain_page[0])
                     : "r"(i)
                     : "memory");
  }
}

void guest_main(uint32_t magic, const struct multiboot_info* mbi) {
  (void)magic;
  (void)mbi;
  flushed_page[0] = 1;
  plain_page[0] = 1;
  flush_loop();
  plain_loop();
  if (flushed_page[0] != N - 1 || plain_page[0] != N - 1) guest_fail("a write was lost");
  kv_dec("n", N);
  kv_hex("flush_touch_rip", (uint32_t)flush_touch);
  kv_hex("plain_touch_rip", (uint32_t)plain_touch);
  guest_done();
}
