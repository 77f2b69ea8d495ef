/* The PC machine's ACPI PM timer at the port the FADT names: a 24-bit counter
   that never goes backwards (modulo 2^24) with bits 24-31 zero, and its rate
   against the TSC across ~100 ms (357954 PM ticks). Each end of the
   interval is a timer read bracketed by two TSC reads, the tightest of 16
   tries, its TSC the bracket's middle: a vCPU descheduled around one read
   (a loaded host, or the nested KVM's outer VM) would otherwise stretch one
   side of the ratio and not the other. pm_reads is the exact number of
   timer port reads, for the host's "pm-timer" exit count.
   Under QEMU the port is PIIX4's 0x608 too; under TCG the TSC runs at the
   host's rate scaled by QEMU, so only the monotonic checks mean much there. */
#include "pc_guest.h"

#define PM_MASK 0xFFFFFFu
#define PM_INTERVAL 357954u /* 100 ms at 3.579545 MHz */
/* A step this large, modulo 2^24, is the counter going backwards. */
#define PM_BACKWARDS 0x800000u

static uint16_t port;
static uint32_t reads;

static uint32_t pm_read(void) {
  uint32_t v = inl(port);
  ++reads;
  if (v & ~PM_MASK) guest_fail("PM timer bits 24-31 are not 0");
  return v;
}

static uint32_t prev, max_step;

/* The next read, checked against the one before it. */
static uint32_t pm_next(void) {
  uint32_t now = pm_read();
  uint32_t step = (now - prev) & PM_MASK;
  if (step >= PM_BACKWARDS) guest_fail("PM timer went backwards");
  if (step > max_step) max_step = step;
  prev = now;
  return now;
}

/* A read and the TSC at it: the tightest bracket of 16 tries. */
static void pm_stamp(uint32_t *pm, uint64_t *tsc) {
  uint64_t best = ~0ull;
  for (int i = 0; i < 16; ++i) {
    uint64_t before = rdtsc();
    uint32_t now = pm_next();
    uint64_t after = rdtsc();
    if (after - before < best) {
      best = after - before;
      *pm = now;
      *tsc = before + (after - before) / 2;
    }
  }
}

void guest_main(uint32_t magic, const struct multiboot_info *mbi) {
  (void)magic;
  (void)mbi;
  port = acpi_pm_timer_port();
  if (port == 0) guest_fail("no FADT PM timer port");
  kv_hex("pm_port", port);

  prev = pm_read();
  uint32_t pm0, pm1;
  uint64_t tsc0, tsc1;
  pm_stamp(&pm0, &tsc0);
  while (((prev - pm0) & PM_MASK) < PM_INTERVAL) pm_next();
  pm_stamp(&pm1, &tsc1);
  kv_dec("pm_ticks", (pm1 - pm0) & PM_MASK);
  kv_dec("tsc_ticks", tsc1 - tsc0);
  kv_dec("pm_max_step", max_step);
  kv_dec("pm_monotonic", 1);
  kv_dec("pm_reads", reads);
  guest_done();
}
