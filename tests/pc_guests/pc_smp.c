/* The PC machine's SMP, from the inside: the BSP starts every AP by INIT and
   SIPI (twice, as the MP specification says) through its local APIC in
   x2APIC mode, one AP at a time so that an AP's index is its APIC ID; each
   AP enables x2APIC, records its APIC IDs and halts with interrupts on. The
   BSP sends each AP one fixed IPI (SMP_IPI_VECTOR); each AP answers its
   first with one IPI back. vCPUs: fw_cfg key 5.
   Under QEMU 7.2's TCG there is no x2APIC (CPUID.1:ECX[21] = 0): the same
   steps run on the xAPIC's MMIO registers and x2apic_mode=0; the APs were
   left halted by SeaBIOS, which INIT resets. */
#include "pc_guest.h"
#include "smp.h"

#define XAPIC_BASE 0xFEE00000u
#define XAPIC_ID 0x20
#define XAPIC_TPR 0x80
#define XAPIC_EOI 0xb0
#define XAPIC_SVR 0xf0
#define XAPIC_ICR_LO 0x300
#define XAPIC_ICR_HI 0x310
#define ICR_INIT 0x00004500u /* INIT, level assert */
#define ICR_SIPI (0x00004600u | (SMP_TRAMPOLINE_BASE >> 12))
#define ICR_FIXED 0x00004000u /* fixed, level assert (as the SDM asks of all but INIT de-assert) */
#define ICR_BUSY (1u << 12)
/* Bounded waits, in TSC ticks: seconds on any host, even a nested KVM. */
#define WAIT_TSC (1ull << 34)

struct cpu {
  volatile uint32_t up, ipis, replied;
  uint32_t apic_id_leaf1, apic_id_leafb, x2apic_id;
};

uint8_t ap_stacks[SMP_MAX_CPUS][1u << SMP_AP_STACK_SHIFT] __attribute__((aligned(16)));
extern const char smp_trampoline_start[], smp_trampoline_end[];
void isr_ipi(void), isr_spurious(void), isr_exception(void), isr_unexpected(void);

static struct cpu cpus[SMP_MAX_CPUS];
static uint32_t ncpus = 1;
static int x2apic_mode;
static uint32_t max_basic_leaf;
static volatile uint32_t stray_ipis;

static volatile uint32_t *xapic(uint32_t reg) { return (volatile uint32_t *)(XAPIC_BASE + reg); }

static uint32_t apic_id(void) { return x2apic_mode ? (uint32_t)rdmsr(MSR_X2APIC_ID) : *xapic(XAPIC_ID) >> 24; }

static void apic_eoi(void) {
  if (x2apic_mode)
    wrmsr(MSR_X2APIC_EOI, 0);
  else
    *xapic(XAPIC_EOI) = 0;
}

static void apic_send(uint32_t dest, uint32_t icr) {
  if (x2apic_mode) {
    wrmsr(MSR_X2APIC_ICR, ((uint64_t)dest << 32) | icr);
    return;
  }
  *xapic(XAPIC_ICR_HI) = dest << 24;
  *xapic(XAPIC_ICR_LO) = icr;
  while (*xapic(XAPIC_ICR_LO) & ICR_BUSY) cpu_relax();
}

/* Enables this CPU's local APIC (x2APIC mode when x2apic_mode), software
   enabled with the spurious vector, TPR 0. */
static void apic_enable(void) {
  uint64_t base = rdmsr(MSR_APIC_BASE) | APIC_BASE_EN;
  if (x2apic_mode) base |= APIC_BASE_EXTD;
  wrmsr(MSR_APIC_BASE, base);
  if (x2apic_mode) {
    wrmsr(MSR_X2APIC_SVR, APIC_SVR_ENABLE | SMP_SPURIOUS_VECTOR);
    wrmsr(MSR_X2APIC_TPR, 0);
  } else {
    *xapic(XAPIC_SVR) = APIC_SVR_ENABLE | SMP_SPURIOUS_VECTOR;
    *xapic(XAPIC_TPR) = 0;
  }
}

static void record_ids(uint32_t index) {
  uint32_t r[4];
  cpuid(1, 0, r);
  cpus[index].apic_id_leaf1 = r[1] >> 24;
  if (max_basic_leaf >= 0xb) {
    cpuid(0xb, 0, r);
    cpus[index].apic_id_leafb = r[3];
  }
  cpus[index].x2apic_id = apic_id();
}

static void idt_init(void) {
  for (uint32_t v = 0; v < 256; ++v) idt_set_gate(v, v < 32 ? isr_exception : isr_unexpected);
  idt_set_gate(SMP_IPI_VECTOR, isr_ipi);
  idt_set_gate(SMP_SPURIOUS_VECTOR, isr_spurious);
}

void ipi_handler(void) {
  uint32_t id = apic_id();
  uint32_t i = 0;
  while (i < ncpus && cpus[i].x2apic_id != id) ++i;
  if (i < ncpus)
    __atomic_fetch_add(&cpus[i].ipis, 1, __ATOMIC_SEQ_CST);
  else
    __atomic_fetch_add(&stray_ipis, 1, __ATOMIC_SEQ_CST);
  apic_eoi();
}

void exception_handler(void) { guest_fail("exception"); }
void unexpected_handler(void) { guest_fail("unexpected interrupt vector"); }

void ap_main(uint32_t index) __attribute__((noreturn));
void ap_main(uint32_t index) {
  struct cpu *self = &cpus[index];
  apic_enable();
  record_ids(index);
  idt_load();
  __atomic_store_n(&self->up, 1, __ATOMIC_SEQ_CST);
  for (;;) {
    irq_disable();
    if (self->ipis != 0 && !self->replied) {
      self->replied = 1;
      apic_send(cpus[0].x2apic_id, ICR_FIXED | SMP_IPI_VECTOR);
    }
    irq_enable_and_halt();
  }
}

static void delay_tsc(uint64_t ticks) {
  uint64_t end = rdtsc() + ticks;
  while (rdtsc() < end) cpu_relax();
}

/* Waits until *word == want; FAIL with `what` after WAIT_TSC ticks. */
static void wait_for(volatile uint32_t *word, uint32_t want, const char *what) {
  uint64_t end = rdtsc() + WAIT_TSC;
  while (*word != want)
    if (rdtsc() > end) guest_fail(what);
}

static void start_ap(uint32_t i) {
  apic_send(i, ICR_INIT);
  delay_tsc(1u << 20); /* the MP specification's 10 ms matters on hardware only */
  apic_send(i, ICR_SIPI);
  delay_tsc(1u << 16);
  apic_send(i, ICR_SIPI);
  wait_for(&cpus[i].up, 1, "an AP did not start");
}

static void put_cpu(uint32_t i, const char *key, uint32_t v) {
  put_str("cpu");
  put_dec(i);
  put_char('.');
  kv_dec(key, v);
}

void guest_main(uint32_t magic, const struct multiboot_info *mbi) {
  (void)magic;
  (void)mbi;
  uint32_t r[4];
  cpuid(0, 0, r);
  max_basic_leaf = r[0];
  cpuid(1, 0, r);
  uint32_t x2apic_supported = (r[2] >> 21) & 1;
  kv_dec("x2apic_supported", x2apic_supported);
  kv_dec("hypervisor", r[2] >> 31);
  kv_hex("max_basic_leaf", max_basic_leaf);
  x2apic_mode = (int)x2apic_supported;
  kv_dec("x2apic_mode", x2apic_mode);

  /* The machine's firmware state leaves the PICs at vector 0x08 with the
     PIT's IRQ 0 unmasked (vmm/boot/bios_state.h): masked before interrupts
     are enabled, as kvm-unit-tests' start-up masks them. */
  pic_mask_all();
  idt_init();
  idt_load();
  apic_enable();
  record_ids(0);
  cpus[0].up = 1;

  uint16_t n = 0;
  fwcfg_read(0x05, &n, 2);
  kv_dec("fwcfg.nb_cpus", n);
  if (n < 1 || n > SMP_MAX_CPUS) guest_fail("fw_cfg vCPU count out of range");
  ncpus = n;

  mem_copy((void *)SMP_TRAMPOLINE_BASE, smp_trampoline_start,
           (uint32_t)(smp_trampoline_end - smp_trampoline_start));
  for (uint32_t i = 1; i < ncpus; ++i) start_ap(i);
  uint32_t up = 0;
  for (uint32_t i = 0; i < ncpus; ++i) up += cpus[i].up;
  kv_dec("cpus_up", up);

  irq_enable();
  for (uint32_t i = 1; i < ncpus; ++i) apic_send(i, ICR_FIXED | SMP_IPI_VECTOR);
  wait_for(&cpus[0].ipis, ncpus - 1, "the BSP did not get an IPI from every AP");
  for (uint32_t i = 1; i < ncpus; ++i) wait_for(&cpus[i].replied, 1, "an AP did not answer");
  irq_disable();

  for (uint32_t i = 0; i < ncpus; ++i) {
    put_cpu(i, "apic_id_leaf1", cpus[i].apic_id_leaf1);
    if (max_basic_leaf >= 0xb) put_cpu(i, "apic_id_leafb", cpus[i].apic_id_leafb);
    put_cpu(i, "x2apic_id", cpus[i].x2apic_id);
    put_cpu(i, "ipis", cpus[i].ipis);
  }
  kv_dec("bsp_ipis", cpus[0].ipis);
  kv_dec("stray_ipis", stray_ipis);
  for (uint32_t i = 1; i < ncpus; ++i)
    if (cpus[i].ipis != 1) guest_fail("an AP did not get exactly one IPI");
  for (uint32_t i = 0; i < ncpus; ++i)
    if (cpus[i].apic_id_leaf1 != i || cpus[i].x2apic_id != i) guest_fail("a CPU's APIC ID is not its index");
  if (stray_ipis != 0) guest_fail("an IPI to an unknown APIC ID");
  guest_done();
}
