/* The PC machine's ACPI tables, as a guest finds them: the RSDP by its scan,
   the RSDT, every table's checksum (and the FADT's DSDT), the FADT's PM
   timer block and the MADT's entries. One read of the PM timer port the FADT
   names ties that port to the host's "pm-timer" device (pm_reads=1).
   Under QEMU the tables are SeaBIOS's: the RSDP lies in 0xF0000-0xFFFFF, the
   OEM IDs are "BOCHS ", the RSDT lists more tables (HPET, WAET), the MADT has
   local APIC NMI entries (type 4, skipped) and more overrides, and the IOAPIC
   ID is 0. */
#include "pc_guest.h"

static void put_sig(const char *s) {
  put_strn(s, 4);
}

static void check_table(const struct acpi_header *t) {
  if (!acpi_checksum_ok(t, t->length)) {
    put_str("FAIL: checksum of ");
    put_sig(t->signature);
    put_char('\n');
    guest_exit(1);
  }
}

static void print_fadt(const struct acpi_header *fadt) {
  const uint8_t *f = (const uint8_t *)fadt;
  const struct acpi_header *dsdt = (const struct acpi_header *)*(const uint32_t *)(f + FADT_OFF_DSDT);
  check_table(dsdt);
  kv_dec("dsdt.length", dsdt->length);
  kv_hex("fadt.pm1a_evt_blk", *(const uint32_t *)(f + FADT_OFF_PM1A_EVT_BLK));
  kv_hex("fadt.pm1a_cnt_blk", *(const uint32_t *)(f + FADT_OFF_PM1A_CNT_BLK));
  kv_hex("fadt.pm_tmr_blk", *(const uint32_t *)(f + FADT_OFF_PM_TMR_BLK));
  kv_dec("fadt.pm_tmr_len", f[FADT_OFF_PM_TMR_LEN]);
  kv_dec("fadt.tmr_val_ext", (*(const uint32_t *)(f + FADT_OFF_FLAGS) >> 8) & 1);
}

static void print_madt(const struct acpi_header *madt) {
  const uint8_t *p = (const uint8_t *)madt;
  kv_hex("madt.lapic_addr", *(const uint32_t *)(p + 36));
  kv_hex("madt.flags", *(const uint32_t *)(p + 40));
  uint32_t lapics = 0, ioapics = 0, overrides = 0;
  for (uint32_t off = 44; off + 2 <= madt->length;) {
    const uint8_t *e = p + off;
    if (e[1] < 2) guest_fail("MADT entry shorter than 2 bytes");
    if (e[0] == 0) {
      put_key_index("madt.lapic", lapics++);
      put_dec(e[2]);
      put_char(',');
      put_dec(e[3]);
      put_char(',');
      put_dec(*(const uint32_t *)(e + 4));
      put_char('\n');
    } else if (e[0] == 1) {
      put_key_index("madt.ioapic", ioapics++);
      put_dec(e[2]);
      put_char(',');
      put_hex(*(const uint32_t *)(e + 4));
      put_char(',');
      put_dec(*(const uint32_t *)(e + 8));
      put_char('\n');
    } else if (e[0] == 2) {
      put_key_index("madt.override", overrides++);
      put_dec(e[2]);
      put_char(',');
      put_dec(e[3]);
      put_char(',');
      put_dec(*(const uint32_t *)(e + 4));
      put_char(',');
      put_hex(*(const uint16_t *)(e + 8));
      put_char('\n');
    }
    off += e[1];
  }
  kv_dec("madt.lapics", lapics);
  kv_dec("madt.ioapics", ioapics);
  kv_dec("madt.overrides", overrides);
}

void guest_main(uint32_t magic, const struct multiboot_info *mbi) {
  (void)magic;
  (void)mbi;
  uint32_t rsdp = acpi_find_rsdp();
  if (rsdp == 0) guest_fail("no RSDP with a valid checksum in 0xE0000-0xFFFFF");
  kv_hex("rsdp", rsdp);
  kv_dec("rsdp.revision", *(const uint8_t *)(rsdp + 15));
  const struct acpi_header *rsdt = (const struct acpi_header *)*(const uint32_t *)(rsdp + 16);
  if (!mem_eq(rsdt->signature, "RSDT", 4)) guest_fail("RSDP does not point at an RSDT");
  check_table(rsdt);
  kv_dec("rsdt.length", rsdt->length);
  const uint32_t *entries = (const uint32_t *)(rsdt + 1);
  uint32_t n = (rsdt->length - sizeof(*rsdt)) / 4;
  kv_dec("rsdt.entries", n);
  for (uint32_t i = 0; i < n; ++i) {
    const struct acpi_header *t = (const struct acpi_header *)entries[i];
    check_table(t);
    put_str("table");
    put_dec(i);
    put_char('=');
    put_sig(t->signature);
    put_char(',');
    put_dec(t->length);
    put_char('\n');
    if (mem_eq(t->signature, "FACP", 4)) print_fadt(t);
    if (mem_eq(t->signature, "APIC", 4)) print_madt(t);
  }
  kv_dec("acpi_checksums_ok", 1);

  uint16_t pm_port = acpi_pm_timer_port();
  if (pm_port == 0) guest_fail("no FADT PM timer port");
  uint32_t pm = inl(pm_port);
  kv_dec("pm_reads", 1);
  kv_hex("pm_value_high_byte", pm >> 24);
  guest_done();
}
