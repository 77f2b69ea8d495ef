/* A guest of your own in one file (docs/own-guest.md), built against the
 * installed package with minivmm_add_guest() and run with
 *
 *   minivmm run --kernel own_guest.elf --memory 16M --json out.json
 *
 * It makes a fixed set of hypercalls, reports what they returned and shuts
 * down with status 7. Each hypercall is one exit; on vCPU 0:
 *
 *   console_io  1 + NULL_CALLS + 1   the greeting, NULL_CALLS writes of
 *                                    0 bytes, one refused command (-EINVAL)
 *   sched_op    YIELDS + 1           YIELDS yields and the shutdown
 *   report      2                    the results, then what the first stored
 *                                    (an overflowing record in between is
 *                                    refused with no hypercall)
 *   number 100  1                    unregistered: -ENOSYS
 *
 * tests/install (step own_guest) checks exactly these counts, the reports
 * and the exit status. */
#include "minivmm_guest/guest.h"

#define NULL_CALLS 10
#define YIELDS 3
#define UNREGISTERED_NR 100 /* in [MVMM_HC_USER_FIRST, MVMM_HC_USER_LAST], not registered */
#define EXIT_STATUS 7

static struct mvmm_report report; /* 16 KiB: in .bss, not on the 64 KiB stack */

/* Pure computation costs no exit. */
static uint64_t fibonacci(uint32_t n) {
  uint64_t a = 0, b = 1;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t next = a + b;
    a = b;
    b = next;
  }
  return a;
}

int mvmm_guest_main(const struct mvmm_boot_info* boot, uint32_t cpu) {
  /* Every vCPU enters here; with --cpus N the others wait, halted with
   * interrupts off, while vCPU 0 runs and shuts the VM down. */
  if (cpu != 0) {
    for (;;) __asm__ volatile("cli; hlt");
  }
  /* Not minivmm's boot protocol: stop at once, with no hypercall. */
  if (boot->magic != MVMM_BOOT_MAGIC || boot->version != MVMM_BOOT_VERSION) return 1;

  int64_t greeting = mvmm_console_print("own_guest: hello from a guest of my own\n");

  int64_t null_sum = 0;
  for (int i = 0; i < NULL_CALLS; ++i) null_sum += mvmm_console_write("", 0);

  int64_t yield_sum = 0;
  for (int i = 0; i < YIELDS; ++i) yield_sum += mvmm_yield();

  int64_t bad_command = mvmm_hypercall3(MVMM_HC_console_io, 7, 0, 0);
  int64_t unregistered = mvmm_hypercall0(UNREGISTERED_NR);

  mvmm_report_u64(&report, "own.cpu", cpu);
  mvmm_report_u64(&report, "own.nr_cpus", boot->nr_cpus);
  mvmm_report_u64(&report, "own.memory_mib", boot->memory_size >> 20);
  mvmm_report_i64(&report, "own.greeting_bytes", greeting);
  mvmm_report_i64(&report, "own.null_calls", NULL_CALLS);
  mvmm_report_i64(&report, "own.null_sum", null_sum);
  mvmm_report_i64(&report, "own.yield_sum", yield_sum);
  mvmm_report_i64(&report, "own.bad_command", bad_command);
  mvmm_report_i64(&report, "own.unregistered", unregistered);
  mvmm_report_u64(&report, "own.fib90", fibonacci(90));
  mvmm_report_str(&report, "own.name", "one-file guest");
  mvmm_report_i64(&report, "own.i64_min", INT64_MIN);
  mvmm_report_u64(&report, "own.u64_max", UINT64_MAX);
  int64_t stored = mvmm_report_send(&report);

  /* A record longer than MVMM_REPORT_MAX_BYTES is refused before any
   * hypercall: -MVMM_E2BIG and no exit. */
  for (uint32_t i = 0; i < MVMM_REPORT_MAX_BYTES / 8; ++i) mvmm_report_u64(&report, "own.x", i);
  int64_t overflowed = mvmm_report_send(&report);

  mvmm_report_i64(&report, "own.stored", stored);
  mvmm_report_i64(&report, "own.overflowed", overflowed);
  if (mvmm_report_send(&report) != 2) return 1;
  return EXIT_STATUS;
}
