/* ACPI S3 on the PC machine, as kvm-unit-tests' s3 does it, checked from
   the inside: the FADT's PM1 blocks, the RTC's registers (D valid, A's UIP
   rising and falling once a second, the date in BCD), then a waking vector
   in the FACS (s3_resume.S at S3_RESUME_BASE), RTC_EN in PM1_EN, an alarm
   every second (every alarm byte "don't care") with register B's AIE, and
   SLP_EN with S3's SLP_TYP in PM1_CNT. The resume code ends the run; this
   code never should again.
   Arguments: "nowake" leaves RTC_EN clear (nothing can wake the machine);
   "s5" asks for S5 (soft off) instead of S3. */
#include "pc_guest.h"
#include "s3.h"

#define RTC_INDEX 0x70
#define RTC_DATA 0x71
#define RTC_UIP 0x80
#define RTC_AIE 0x20
#define PM1_RTC_EN 0x400
#define PM1_SLP_EN 0x2000
#define PM1_SLP_TYP_SHIFT 10
#define SLP_TYP_S3 1
#define SLP_TYP_S5 0
#define UIP_POLLS 10000000u /* far more reads than a second takes */

extern char s3_resume_start[], s3_resume_end[];

static uint8_t rtc_in(uint8_t reg) {
  outb(RTC_INDEX, reg);
  return inb(RTC_DATA);
}

static void rtc_out(uint8_t reg, uint8_t value) {
  outb(RTC_INDEX, reg);
  outb(RTC_DATA, value);
}

void guest_main(uint32_t magic, const struct multiboot_info *mbi) {
  (void)magic;
  const char *cmdline = (mbi->flags & (1u << 2)) ? (const char *)mbi->cmdline : "";
  uint32_t rsdp = acpi_find_rsdp();
  const uint8_t *fadt = (const uint8_t *)acpi_find_table(rsdp, "FACP");
  if (fadt == 0) guest_fail("no FADT");
  const uint32_t facs = *(const uint32_t *)(fadt + 36);
  const uint16_t pm1_evt = (uint16_t) * (const uint32_t *)(fadt + FADT_OFF_PM1A_EVT_BLK);
  const uint16_t pm1_cnt = (uint16_t) * (const uint32_t *)(fadt + FADT_OFF_PM1A_CNT_BLK);
  kv_hex("pm1_evt", pm1_evt);
  kv_hex("pm1_cnt", pm1_cnt);
  kv_hex("pm1_cnt_value", inw(pm1_cnt));

  kv_hex("rtc_reg_d", rtc_in(0x0D));
  kv_hex("rtc_reg_b", rtc_in(0x0B));
  /* UIP once up and once down: the second's boundary just passed. */
  uint32_t polls = 0;
  while ((rtc_in(0x0A) & RTC_UIP) == 0)
    if (++polls == UIP_POLLS) guest_fail("RTC UIP never rose");
  while ((rtc_in(0x0A) & RTC_UIP) != 0)
    if (++polls == UIP_POLLS) guest_fail("RTC UIP never fell");
  kv_dec("rtc_uip_seen", 1);
  put_str("rtc_date=");
  put_hex(rtc_in(0x32));
  put_hex(rtc_in(0x09));
  put_hex(rtc_in(0x08));
  put_hex(rtc_in(0x07));
  put_char('\n');

  *(volatile uint32_t *)(facs + 12) = S3_RESUME_BASE; /* FIRMWARE_WAKING_VECTOR */
  mem_copy((void *)S3_RESUME_BASE, s3_resume_start, (uint32_t)(s3_resume_end - s3_resume_start));
  *phys32(S3_PM1_EVT_PORT) = pm1_evt;
  if (!has_word(cmdline, "nowake")) outw(pm1_evt + 2, PM1_RTC_EN);
  (void)rtc_in(0x0C);
  rtc_out(0x01, 0xC0);
  rtc_out(0x03, 0xC0);
  rtc_out(0x05, 0xC0);
  rtc_out(0x0B, rtc_in(0x0B) | RTC_AIE);

  const uint32_t slp_typ = has_word(cmdline, "s5") ? SLP_TYP_S5 : SLP_TYP_S3;
  put_str("sleeping\n");
  *phys32(S3_MARKER) = 0;
  outw(pm1_cnt, (uint16_t)(PM1_SLP_EN | (slp_typ << PM1_SLP_TYP_SHIFT)));
  for (;;) *phys32(S3_MARKER) = 1;
}
