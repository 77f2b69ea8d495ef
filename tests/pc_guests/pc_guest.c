/* The PC guests' runtime (pc_guest.h). */
#include "pc_guest.h"

#define COM1_THR 0x3f8
#define DEBUG_EXIT_PORT 0xf4

void put_char(char c) { outb(COM1_THR, (uint8_t)c); }

void put_str(const char *s) {
  while (*s) put_char(*s++);
}

void put_strn(const char *s, uint32_t max) {
  for (uint32_t i = 0; i < max && s[i]; ++i) put_char(s[i]);
}

/* v / 10 and v % 10 for a 64-bit v with two 32-bit divl (no libgcc here):
   the high half first, then remainder:low, whose quotient fits 32 bits. */
static uint64_t div10(uint64_t v, uint32_t *rem) {
  uint32_t hi = (uint32_t)(v >> 32), lo = (uint32_t)v;
  uint32_t q_hi = hi / 10, r = hi % 10, q_lo;
  __asm__("divl %4" : "=a"(q_lo), "=d"(r) : "a"(lo), "d"(r), "rm"(10u));
  *rem = r;
  return ((uint64_t)q_hi << 32) | q_lo;
}

void put_dec(uint64_t v) {
  char buf[24];
  int n = 0;
  do {
    uint32_t digit;
    v = div10(v, &digit);
    buf[n++] = (char)('0' + digit);
  } while (v != 0);
  while (n > 0) put_char(buf[--n]);
}

void put_key_index(const char *key, uint32_t index) {
  put_str(key);
  put_dec(index);
  put_char('=');
}

void put_hex(uint64_t v) {
  static const char kDigits[] = "0123456789abcdef";
  int shift = 60;
  put_str("0x");
  while (shift > 0 && ((v >> shift) & 0xf) == 0) shift -= 4;
  for (; shift >= 0; shift -= 4) put_char(kDigits[(v >> shift) & 0xf]);
}

void kv_str(const char *key, const char *value) {
  put_str(key);
  put_char('=');
  put_str(value);
  put_char('\n');
}

void kv_dec(const char *key, uint64_t value) {
  put_str(key);
  put_char('=');
  put_dec(value);
  put_char('\n');
}

void kv_hex(const char *key, uint64_t value) {
  put_str(key);
  put_char('=');
  put_hex(value);
  put_char('\n');
}

void guest_exit(uint32_t code) {
  outl(DEBUG_EXIT_PORT, code);
  for (;;) __asm__ volatile("cli; hlt");
}

void guest_fail(const char *what) {
  put_str("FAIL: ");
  put_str(what);
  put_char('\n');
  guest_exit(1);
}

void guest_done(void) {
  put_str("done\n");
  guest_exit(0);
}

int str_eq(const char *a, const char *b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

int mem_eq(const void *a, const void *b, uint32_t n) {
  const uint8_t *x = a, *y = b;
  for (uint32_t i = 0; i < n; ++i)
    if (x[i] != y[i]) return 0;
  return 1;
}

void mem_copy(void *dst, const void *src, uint32_t n) {
  uint8_t *d = dst;
  const uint8_t *s = src;
  for (uint32_t i = 0; i < n; ++i) d[i] = s[i];
}

uint32_t str_len(const char *s) {
  uint32_t n = 0;
  while (s[n]) ++n;
  return n;
}

uint32_t fwcfg_read(uint16_t key, void *buf, uint32_t len) {
  uint8_t *out = buf;
  outw(FWCFG_PORT_SELECTOR, key);
  for (uint32_t i = 0; i < len; ++i) out[i] = inb(FWCFG_PORT_DATA);
  return 1 + len;
}

int acpi_checksum_ok(const void *p, uint32_t n) {
  const uint8_t *b = p;
  uint8_t sum = 0;
  for (uint32_t i = 0; i < n; ++i) sum = (uint8_t)(sum + b[i]);
  return sum == 0;
}

uint32_t acpi_find_rsdp(void) {
  for (uint32_t a = 0xE0000; a < 0x100000; a += 16) {
    const char *p = (const char *)a;
    if (mem_eq(p, "RSD PTR ", 8) && acpi_checksum_ok(p, 20)) return a;
  }
  return 0;
}

const struct acpi_header *acpi_find_table(uint32_t rsdp, const char sig[4]) {
  const struct acpi_header *rsdt = (const struct acpi_header *)*(const uint32_t *)(rsdp + 16);
  const uint32_t *entries = (const uint32_t *)(rsdt + 1);
  uint32_t n = (rsdt->length - sizeof(*rsdt)) / 4;
  for (uint32_t i = 0; i < n; ++i) {
    const struct acpi_header *t = (const struct acpi_header *)entries[i];
    if (mem_eq(t->signature, sig, 4)) return t;
  }
  return 0;
}

uint16_t acpi_pm_timer_port(void) {
  uint32_t rsdp = acpi_find_rsdp();
  if (rsdp == 0) return 0;
  const struct acpi_header *fadt = acpi_find_table(rsdp, "FACP");
  if (fadt == 0) return 0;
  return (uint16_t)*(const uint32_t *)((const uint8_t *)fadt + FADT_OFF_PM_TMR_BLK);
}

int has_word(const char *s, const char *word) {
  uint32_t n = str_len(word);
  for (const char *p = s; *p; ++p) {
    if ((p == s || p[-1] == ' ') && mem_eq(p, word, n) && (p[n] == ' ' || p[n] == 0)) return 1;
  }
  return 0;
}

struct __attribute__((packed)) idt_gate {
  uint16_t offset_lo, selector;
  uint8_t zero, type;
  uint16_t offset_hi;
};
static struct idt_gate idt[256];
static struct __attribute__((packed)) {
  uint16_t limit;
  uint32_t base;
} idtr = {sizeof(idt) - 1, 0};

void idt_set_gate(uint32_t vector, void (*handler)(void)) {
  uint32_t a = (uint32_t)handler;
  idt[vector & 0xff] = (struct idt_gate){(uint16_t)a, 0x08, 0, 0x8e, (uint16_t)(a >> 16)};
}

void idt_load(void) {
  idtr.base = (uint32_t)idt;
  __asm__ volatile("lidt %0" ::"m"(idtr));
}

void x2apic_enable(uint8_t spurious) {
  uint32_t r[4];
  cpuid(1, 0, r);
  if (!(r[2] & (1u << 21))) guest_fail("no x2APIC");
  wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_BASE_EN | APIC_BASE_EXTD);
  wrmsr(MSR_X2APIC_SVR, APIC_SVR_ENABLE | spurious);
  wrmsr(MSR_X2APIC_TPR, 0);
}
