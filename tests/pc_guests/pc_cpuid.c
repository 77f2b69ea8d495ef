/* CPUID as the guest sees it, for --cpu-features and --cpu-vendor: the
   vendor strings of leaves 0 and 0x80000000 and the registers that hold the
   bits kCpuFeatures names (leaf 1 ECX, leaf 7 EBX and ECX, leaf 0x80000001
   ECX and EDX, leaf 0x8000000A EDX), each as "leaf.reg=0x..." where the
   leaf exists (0 where its maximum leaf says it does not). */
#include "pc_guest.h"

static void vendor(const char *key, uint32_t leaf) {
  uint32_t r[4];
  char text[13];
  cpuid(leaf, 0, r);
  mem_copy(text, &r[1], 4);
  mem_copy(text + 4, &r[3], 4);
  mem_copy(text + 8, &r[2], 4);
  text[12] = 0;
  kv_str(key, text);
}

/* The register `reg` (0 EAX .. 3 EDX) of `leaf`, or 0 past `max`. */
static void reg(const char *key, uint32_t max, uint32_t leaf, int index) {
  uint32_t r[4] = {0, 0, 0, 0};
  if (leaf <= max) cpuid(leaf, 0, r);
  kv_hex(key, r[index]);
}

void guest_main(uint32_t magic, const struct multiboot_info *mbi) {
  (void)magic;
  (void)mbi;
  uint32_t r[4];
  cpuid(0, 0, r);
  const uint32_t max = r[0];
  cpuid(0x80000000u, 0, r);
  const uint32_t max_ext = r[0];
  vendor("vendor", 0);
  vendor("vendor_ext", 0x80000000u);
  reg("1.ecx", max, 1, 2);
  reg("7.ebx", max, 7, 1);
  reg("7.ecx", max, 7, 2);
  reg("80000001.ecx", max_ext, 0x80000001u, 2);
  reg("80000001.edx", max_ext, 0x80000001u, 3);
  reg("8000000a.edx", max_ext, 0x8000000au, 3);
  guest_done();
}
