/* Exits of known reasons at known places, for --kernel-exits: exactly N
   CPUIDs (cpuid_loop), N reads of IA32_APIC_BASE (rdmsr_loop, an MSR KVM
   always intercepts) and N HLTs (hlt_loop: the local APIC's timer armed
   for 1 ms, then STI; HLT, so that each HLT exits once and the timer wakes
   it; a self-IPI left pending would be taken right after STI's shadow,
   which a nested KVM under TCG was seen, once, to deliver before the HLT,
   which then never woke).
   It prints N and the address of each of the three instructions, which the
   test finds among the tracepoint's (reason, RIP) counts, and the return
   addresses of each loop and of guest_main: each instruction's whole
   frame-pointer stack, which --kernel-exits --sites finds. */
#include "pc_guest.h"

#define N 64
#define WAKE_VECTOR 0x40
#define MSR_X2APIC_LVT_TIMER 0x832
#define MSR_X2APIC_TIMER_INITIAL 0x838
#define MSR_X2APIC_TIMER_DIVIDE 0x83e
/* KVM's APIC timer counts at 1 GHz with divide-by-1 (divide value 0xb). */
#define TIMER_1MS 1000000
#define SPURIOUS_VECTOR 0xff

static volatile uint32_t wakes;
/* Where each loop returns to in guest_main. */
static uint32_t cpuid_ret, rdmsr_ret, hlt_ret;

extern const char exits_cpuid[], exits_rdmsr[], exits_hlt[];
void isr_wake(void), isr_other(void);

void wake_handler(void) {
  ++wakes;
  wrmsr(MSR_X2APIC_EOI, 0);
}

void other_handler(void) { guest_fail("unexpected interrupt or exception"); }

__asm__(".globl isr_wake, isr_other\n"
        "isr_wake:\n  pushal\n  cld\n  call wake_handler\n  popal\n  iret\n"
        "isr_other:\n  cld\n  call other_handler\n");

static __attribute__((noinline)) void cpuid_loop(void) {
  for (uint32_t i = 0; i < N; ++i) {
    uint32_t a = 0, b, c = 0, d;
    __asm__ volatile(".globl exits_cpuid\nexits_cpuid: cpuid"
                     : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
  }
  cpuid_ret = (uint32_t)__builtin_return_address(0);
}

static __attribute__((noinline)) void rdmsr_loop(void) {
  for (uint32_t i = 0; i < N; ++i) {
    uint32_t lo, hi;
    __asm__ volatile(".globl exits_rdmsr\nexits_rdmsr: rdmsr"
                     : "=a"(lo), "=d"(hi)
                     : "c"(MSR_APIC_BASE));
  }
  rdmsr_ret = (uint32_t)__builtin_return_address(0);
}

static __attribute__((noinline)) void hlt_loop(void) {
  for (uint32_t i = 0; i < N; ++i) {
    wrmsr(MSR_X2APIC_TIMER_INITIAL, TIMER_1MS);
    __asm__ volatile("sti\n.globl exits_hlt\nexits_hlt: hlt\ncli" ::: "memory");
  }
  hlt_ret = (uint32_t)__builtin_return_address(0);
}

void guest_main(uint32_t magic, const struct multiboot_info *mbi) {
  (void)magic;
  (void)mbi;
  x2apic_enable(SPURIOUS_VECTOR);
  for (uint32_t v = 0; v < 256; ++v) idt_set_gate(v, isr_other);
  idt_set_gate(WAKE_VECTOR, isr_wake);
  idt_load();
  wrmsr(MSR_X2APIC_TIMER_DIVIDE, 0xb);
  wrmsr(MSR_X2APIC_LVT_TIMER, WAKE_VECTOR); /* one-shot, unmasked */

  cpuid_loop();
  rdmsr_loop();
  hlt_loop();
  if (wakes != N) guest_fail("a HLT was not woken by its timer");
  kv_dec("n", N);
  kv_hex("cpuid_rip", (uint32_t)exits_cpuid);
  kv_hex("rdmsr_rip", (uint32_t)exits_rdmsr);
  kv_hex("hlt_rip", (uint32_t)exits_hlt);
  kv_hex("cpuid_ret", cpuid_ret);
  kv_hex("rdmsr_ret", rdmsr_ret);
  kv_hex("hlt_ret", hlt_ret);
  /* Where guest_main returns to: the bottom of every stack (entry.S clears
     EBP before it calls guest_main). */
  kv_hex("main_ret", (uint32_t)__builtin_return_address(0));
  guest_done();
}
