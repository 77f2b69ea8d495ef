/* What a BIOS would have left, which the PC machine sets itself
   (vmm/boot/bios_state.h), checked from the inside by what a PC guest can
   observe:
   - the real-mode vector table: vectors 0x08-0x0F (IRQ 0-7) and 0x70-0x77
     (IRQ 8-15) to handlers in segment F000, every other vector to F000:FF53;
   - the PICs' masks (OCW1 read back at 0x21 and 0xA1) and in-service
     registers (OCW3);
   - PIT channel 0's status by the read-back command (0xFF: no PIT);
   - with the argument "trip": a round trip to real mode (bios_trip.S) whose
     sti; hlt returns only if an interrupt came through the vector table, and
     after which nothing is left in service at the PICs: the handler sent the
     EOI. Needs the PIT. */
#include "pc_guest.h"

#define BIOS_TRIP_BASE 0x7000
#define PIC_MASTER 0x20
#define PIC_SLAVE 0xA0
#define PIT_CHANNEL0 0x40
#define PIT_CONTROL 0x43
#define PIT_READ_BACK_STATUS0 0xE2 /* read-back: latch channel 0's status only */

extern char bios_trip_start[], bios_trip_end[];

/* The table at 0. */
static const volatile uint32_t *ivt(void) { return phys32(0); }

static uint32_t far_pointer(uint16_t segment, uint16_t offset) {
  return ((uint32_t)segment << 16) | offset;
}

static uint8_t pic_isr(uint16_t port) {
  outb(port, 0x0B); /* OCW3: read the ISR */
  uint8_t isr = inb(port);
  outb(port, 0x0A); /* back to the IRR */
  return isr;
}

void guest_main(uint32_t magic, const struct multiboot_info *mbi) {
  (void)magic;
  const uint32_t irq0 = ivt()[0x08], irq8 = ivt()[0x70];
  kv_hex("ivt_irq0", irq0);
  kv_hex("ivt_irq8", irq8);
  kv_hex("ivt_other", ivt()[0x00]);
  uint32_t mismatches = 0;
  for (uint32_t v = 0; v < 256; ++v) {
    uint32_t want = far_pointer(0xF000, 0xFF53);
    if (v >= 0x08 && v < 0x10) want = irq0;
    if (v >= 0x70 && v < 0x78) want = irq8;
    if (ivt()[v] != want) ++mismatches;
  }
  kv_dec("ivt_mismatches", mismatches);
  kv_hex("pic_master_mask", inb(PIC_MASTER + 1));
  kv_hex("pic_slave_mask", inb(PIC_SLAVE + 1));
  outb(PIT_CONTROL, PIT_READ_BACK_STATUS0);
  kv_hex("pit_status", inb(PIT_CHANNEL0));

  const char *cmdline = (mbi->flags & (1u << 2)) ? (const char *)mbi->cmdline : "";
  if (has_word(cmdline, "trip")) {
    mem_copy((void *)BIOS_TRIP_BASE, bios_trip_start, (uint32_t)(bios_trip_end - bios_trip_start));
    ((void (*)(void))BIOS_TRIP_BASE)();
    kv_dec("real_mode_woken", 1);
    kv_hex("pic_master_isr", pic_isr(PIC_MASTER));
    kv_hex("pic_slave_isr", pic_isr(PIC_SLAVE));
  }
  guest_done();
}
