/* The PC machine's Multiboot entry, checked from the inside: the entry state
   (EAX magic, CR0.PE=1 and PG=0, EFLAGS.IF=0 and VM=0) and every field of the
   Multiboot information. A word "exit=N" on the command line makes it exit
   with N after "done" (status (N << 1) | 1).
   Under QEMU the information is QEMU's own: at 0x9500 (not 0x9000), its flags
   0x24f (adding boot_device and the boot loader name), mem_upper 1 MiB less
   (SeaBIOS keeps RAM's last 128 KiB) and its memory map has SeaBIOS's and
   the PCI hole's reserved ranges; the checks here still pass. */
#include "pc_guest.h"

#define CR0_PE (1u << 0)
#define CR0_PG (1u << 31)
#define EFLAGS_IF (1u << 9)
#define EFLAGS_VM (1u << 17)
#define MBI_CMDLINE (1u << 2)
#define MBI_MODS (1u << 3)
#define MBI_MMAP (1u << 6)

static void put_indexed(const char *prefix, uint32_t i, const char *suffix) {
  put_str(prefix);
  put_dec(i);
  put_str(suffix);
}

/* N from the first word "exit=N" of `cmdline`; 0 without one. */
static uint32_t exit_code_from(const char *cmdline) {
  const char *p = cmdline;
  while (*p) {
    while (*p == ' ') ++p;
    if (mem_eq(p, "exit=", 5)) {
      uint32_t n = 0;
      for (p += 5; *p >= '0' && *p <= '9'; ++p) n = n * 10 + (uint32_t)(*p - '0');
      return n;
    }
    while (*p && *p != ' ') ++p;
  }
  return 0;
}

static void print_modules(const struct multiboot_info *mbi) {
  const struct multiboot_module *mods = (const struct multiboot_module *)mbi->mods_addr;
  kv_dec("mods_count", mbi->mods_count);
  for (uint32_t i = 0; i < mbi->mods_count; ++i) {
    const struct multiboot_module *m = &mods[i];
    if (m->mod_start & 0xfff) guest_fail("module not page-aligned");
    if (m->mod_end < m->mod_start) guest_fail("module ends before it starts");
    put_indexed("mod", i, ".start=");
    put_hex(m->mod_start);
    put_indexed("\nmod", i, ".end=");
    put_hex(m->mod_end);
    put_indexed("\nmod", i, ".size=");
    put_dec(m->mod_end - m->mod_start);
    put_indexed("\nmod", i, ".string=");
    put_str((const char *)m->string);
    /* The first line: up to 64 bytes, up to the first newline. */
    put_indexed("\nmod", i, ".first_line=");
    const char *data = (const char *)m->mod_start;
    for (uint32_t k = 0; k < 64 && m->mod_start + k < m->mod_end && data[k] != '\n'; ++k)
      put_char(data[k]);
    put_char('\n');
  }
}

static void print_mmap(const struct multiboot_info *mbi) {
  uint32_t i = 0;
  for (uint32_t a = mbi->mmap_addr; a < mbi->mmap_addr + mbi->mmap_length; ++i) {
    const struct multiboot_mmap_entry *e = (const struct multiboot_mmap_entry *)a;
    put_indexed("mmap", i, "=");
    put_hex(e->base);
    put_char(',');
    put_hex(e->length);
    put_char(',');
    put_dec(e->type);
    put_char('\n');
    a += e->size + 4;
  }
  kv_dec("mmap_entries", i);
}

void guest_main(uint32_t magic, const struct multiboot_info *mbi) {
  kv_hex("magic", magic);
  kv_hex("mbi", (uint32_t)mbi);
  kv_hex("cr0", entry_cr0);
  kv_hex("eflags", entry_eflags);
  kv_dec("cr0.pe", (entry_cr0 & CR0_PE) != 0);
  kv_dec("cr0.pg", (entry_cr0 & CR0_PG) != 0);
  kv_dec("eflags.if", (entry_eflags & EFLAGS_IF) != 0);
  kv_dec("eflags.vm", (entry_eflags & EFLAGS_VM) != 0);
  if (magic != MULTIBOOT_BOOT_MAGIC) guest_fail("EAX is not the Multiboot magic");
  if (!(entry_cr0 & CR0_PE) || (entry_cr0 & CR0_PG)) guest_fail("CR0: want PE=1 PG=0");
  if (entry_eflags & (EFLAGS_IF | EFLAGS_VM)) guest_fail("EFLAGS: want IF=0 VM=0");

  kv_hex("flags", mbi->flags);
  kv_dec("mem_lower", mbi->mem_lower);
  kv_dec("mem_upper", mbi->mem_upper);
  const char *cmdline = "";
  if (mbi->flags & MBI_CMDLINE) {
    cmdline = (const char *)mbi->cmdline;
    kv_str("cmdline", cmdline);
  }
  if (mbi->flags & MBI_MODS)
    print_modules(mbi);
  else
    kv_dec("mods_count", 0);
  if (mbi->flags & MBI_MMAP) print_mmap(mbi);

  uint32_t code = exit_code_from(cmdline);
  put_str("done\n");
  guest_exit(code);
}
