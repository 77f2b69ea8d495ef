/* The `report` hypercall from a guest of your own (docs/own-guest.md): a
 * record of `key=value` lines built in a buffer, then sent in one hypercall.
 * The VMM stores the entries in the run's record (`guest.reports` of
 * `minivmm run --json`, RunResult::reports, `report` marks in a trace); an
 * integer value becomes a JSON number there.
 *
 *   static struct mvmm_report r;       // 16 KiB: static storage, not the stack
 *   mvmm_report_u64(&r, "loops", 10);
 *   mvmm_report_i64(&r, "err", -22);
 *   mvmm_report_str(&r, "mode", "fast");
 *   mvmm_report_send(&r);              // one exit; empties r
 *
 * Keys are [A-Za-z0-9_.-]+ and values hold no control character but TAB
 * (docs/hypercalls.md): the VMM refuses a whole record that breaks a rule
 * with -MVMM_EINVAL and stores none of it. The helpers do not check keys;
 * they only refuse to overflow the buffer. */
#ifndef MINIVMM_GUEST_REPORT_H_
#define MINIVMM_GUEST_REPORT_H_

#include <stdint.h>

#include "minivmm_guest/hypercall.h"

struct mvmm_report {
  uint32_t len;        /* bytes of text in use */
  uint32_t overflowed; /* an append did not fit: mvmm_report_send refuses */
  char text[MVMM_REPORT_MAX_BYTES];
};

/* Appends `n` bytes, or marks the record overflowed if they do not fit. */
static inline void mvmm_report_append_(struct mvmm_report* r, const char* s, uint32_t n) {
  if (r->overflowed || n > MVMM_REPORT_MAX_BYTES - r->len) {
    r->overflowed = 1;
    return;
  }
  for (uint32_t i = 0; i < n; ++i) r->text[r->len + i] = s[i];
  r->len += n;
}

static inline uint32_t mvmm_strlen_(const char* s) {
  uint32_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

/* Appends the line `key=value\n`, value a string. */
static inline void mvmm_report_str(struct mvmm_report* r, const char* key, const char* value) {
  mvmm_report_append_(r, key, mvmm_strlen_(key));
  mvmm_report_append_(r, "=", 1);
  mvmm_report_append_(r, value, mvmm_strlen_(value));
  mvmm_report_append_(r, "\n", 1);
}

/* Appends `key=<decimal>\n`; `negative` puts a '-' before `magnitude`. */
static inline void mvmm_report_decimal_(struct mvmm_report* r, const char* key, int negative,
                                        uint64_t magnitude) {
  char digits[21]; /* sign and 20 digits of UINT64_MAX, filled from the end */
  uint32_t at = sizeof(digits);
  do {
    digits[--at] = (char)('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude != 0);
  if (negative) digits[--at] = '-';
  mvmm_report_append_(r, key, mvmm_strlen_(key));
  mvmm_report_append_(r, "=", 1);
  mvmm_report_append_(r, digits + at, (uint32_t)sizeof(digits) - at);
  mvmm_report_append_(r, "\n", 1);
}

/* Appends `key=<value in decimal>\n`. */
static inline void mvmm_report_u64(struct mvmm_report* r, const char* key, uint64_t value) {
  mvmm_report_decimal_(r, key, 0, value);
}

/* Appends `key=<value in decimal>\n`, with a '-' when negative (a hypercall's
 * errno result, say). */
static inline void mvmm_report_i64(struct mvmm_report* r, const char* key, int64_t value) {
  if (value < 0) {
    mvmm_report_decimal_(r, key, 1, (uint64_t)0 - (uint64_t)value);
  } else {
    mvmm_report_decimal_(r, key, 0, (uint64_t)value);
  }
}

/* report(text, len): sends the record in one hypercall (one exit) and
 * empties `r` whatever happens. Returns the number of entries the VMM stored,
 * or its negative errno; -MVMM_E2BIG without a hypercall when an append
 * overflowed. An empty record is sent too (0 entries). */
static inline int64_t mvmm_report_send(struct mvmm_report* r) {
  int64_t result = -MVMM_E2BIG;
  if (!r->overflowed) {
    result = mvmm_hypercall2(MVMM_HC_report, (uint64_t)(uintptr_t)r->text, r->len);
  }
  r->len = 0;
  r->overflowed = 0;
  return result;
}

#endif /* MINIVMM_GUEST_REPORT_H_ */
