/* The PC machine's fw_cfg, read through its legacy ports: every key the
   device answers and one it does not (0x0b), and the exact number of port
   accesses made, which the host compares with the device's exit count.
   Under QEMU the values are QEMU's: the ID has the DMA bit too (0x3), the
   file directory lists QEMU's files, nographic is 0 without -nographic, and
   0x0b is FW_CFG_INITRD_SIZE, which its Multiboot loader sets. */
#include "pc_guest.h"

static uint32_t accesses;

static uint64_t read_le(uint16_t key, uint32_t len) {
  uint8_t b[8] = {0};
  accesses += fwcfg_read(key, b, len);
  uint64_t v = 0;
  for (uint32_t i = len; i > 0; --i) v = (v << 8) | b[i - 1];
  return v;
}

void guest_main(uint32_t magic, const struct multiboot_info *mbi) {
  (void)magic;
  (void)mbi;
  char sig[5] = {0};
  accesses += fwcfg_read(0x00, sig, 4);
  kv_str("fwcfg.signature", sig);
  kv_hex("fwcfg.id", read_le(0x01, 4));
  kv_dec("fwcfg.ram_bytes", read_le(0x03, 8));
  kv_dec("fwcfg.nb_cpus", read_le(0x05, 2));
  kv_dec("fwcfg.max_cpus", read_le(0x0f, 2));
  uint8_t dir[4];
  accesses += fwcfg_read(0x19, dir, 4);
  kv_dec("fwcfg.file_count",
         ((uint32_t)dir[0] << 24) | ((uint32_t)dir[1] << 16) | ((uint32_t)dir[2] << 8) | dir[3]);
  kv_dec("fwcfg.nographic", read_le(0x04, 2));
  kv_hex("fwcfg.key_0x0b", read_le(0x0b, 4));
  kv_dec("fwcfg_port_accesses", accesses);
  if (!str_eq(sig, "QEMU")) guest_fail("fw_cfg signature is not QEMU");
  guest_done();
}
