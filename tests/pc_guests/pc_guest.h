/* The PC guests' runtime: Multiboot structures, port I/O, COM1 output as
   key=value lines, CPUID/MSR/TSC, fw_cfg, the ACPI table walk and the exit
   through QEMU's isa-debug-exit. 32-bit, freestanding, paging off (physical
   addresses are pointers). */
#ifndef MINIVMM_TESTS_PC_GUESTS_PC_GUEST_H_
#define MINIVMM_TESTS_PC_GUESTS_PC_GUEST_H_

#include <stddef.h>
#include <stdint.h>

#define MULTIBOOT_BOOT_MAGIC 0x2BADB002u

struct multiboot_info {
  uint32_t flags;
  uint32_t mem_lower, mem_upper;
  uint32_t boot_device;
  uint32_t cmdline;
  uint32_t mods_count, mods_addr;
  uint32_t syms[4];
  uint32_t mmap_length, mmap_addr;
};

struct multiboot_module {
  uint32_t mod_start, mod_end;
  uint32_t string;
  uint32_t reserved;
};

struct __attribute__((packed)) multiboot_mmap_entry {
  uint32_t size; /* bytes after this field */
  uint64_t base, length;
  uint32_t type;
};

/* What entry.S saw before it changed anything. */
extern uint32_t entry_eax, entry_ebx, entry_cr0, entry_eflags;

/* Each guest's own code: called once on the boot CPU, on a 16 KiB stack,
   on entry.S's GDT (code 0x08, data 0x10). */
void guest_main(uint32_t magic, const struct multiboot_info *mbi);

static inline void outb(uint16_t port, uint8_t v) { __asm__ volatile("outb %0, %1" ::"a"(v), "Nd"(port)); }
static inline void outw(uint16_t port, uint16_t v) { __asm__ volatile("outw %0, %1" ::"a"(v), "Nd"(port)); }
static inline void outl(uint16_t port, uint32_t v) { __asm__ volatile("outl %0, %1" ::"a"(v), "Nd"(port)); }
static inline uint8_t inb(uint16_t port) {
  uint8_t v;
  __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
  return v;
}
static inline uint16_t inw(uint16_t port) {
  uint16_t v;
  __asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
  return v;
}
static inline uint32_t inl(uint16_t port) {
  uint32_t v;
  __asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
  return v;
}

static inline void cpuid(uint32_t leaf, uint32_t subleaf, uint32_t r[4]) {
  __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(subleaf));
}
static inline uint64_t rdmsr(uint32_t msr) {
  uint32_t lo, hi;
  __asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
  return ((uint64_t)hi << 32) | lo;
}
static inline void wrmsr(uint32_t msr, uint64_t v) {
  __asm__ volatile("wrmsr" ::"c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
}
static inline uint64_t rdtsc(void) {
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}
static inline uint32_t read_cr0(void) {
  uint32_t v;
  __asm__ volatile("mov %%cr0, %0" : "=r"(v));
  return v;
}
static inline void cpu_relax(void) { __asm__ volatile("pause" ::: "memory"); }
static inline void irq_disable(void) { __asm__ volatile("cli" ::: "memory"); }
static inline void irq_enable(void) { __asm__ volatile("sti" ::: "memory"); }
/* The 32-bit word at low physical `address` (0 included) through a pointer
   the compiler cannot see is constant, so that it neither folds nor traps
   an access at or near null. */
static inline volatile uint32_t *phys32(uint32_t address) {
  volatile uint32_t *p;
  __asm__("" : "=r"(p) : "0"(address));
  return p;
}
/* Masks every input of both 8259 PICs (OCW1), as an OS does before it
   enables interrupts on a PC whose BIOS left the timer unmasked. */
static inline void pic_mask_all(void) {
  outb(0x21, 0xff);
  outb(0xa1, 0xff);
}
/* The guest's IDT: 256 32-bit interrupt gates in the code segment entry.S
   loads (0x08), all empty until set. idt_load loads it on the calling CPU. */
void idt_set_gate(uint32_t vector, void (*handler)(void));
void idt_load(void);

/* The local APIC in x2APIC mode (its MSRs). */
#define MSR_APIC_BASE 0x1b
#define APIC_BASE_EXTD (1u << 10)
#define APIC_BASE_EN (1u << 11)
#define MSR_X2APIC_ID 0x802
#define MSR_X2APIC_TPR 0x808
#define MSR_X2APIC_EOI 0x80b
#define MSR_X2APIC_SVR 0x80f
#define MSR_X2APIC_ICR 0x830
#define MSR_X2APIC_SELF_IPI 0x83f
#define APIC_SVR_ENABLE 0x100u
/* This CPU's local APIC in x2APIC mode, software-enabled with `spurious`
   as its spurious vector, TPR 0; guest_fail where CPUID has no x2APIC. */
void x2apic_enable(uint8_t spurious);

/* sti's one-instruction shadow: no interrupt is taken between the two, so a
   wake-up checked with interrupts off cannot be lost. */
static inline void irq_enable_and_halt(void) { __asm__ volatile("sti; hlt" ::: "memory"); }

/* COM1 (0x3f8) output: THR writes only, no LSR polling. */
void put_char(char c);
void put_str(const char *s);
void put_strn(const char *s, uint32_t max); /* up to max bytes, stops at NUL */
void put_dec(uint64_t v);
void put_hex(uint64_t v); /* 0x-prefixed, lower case */
void put_key_index(const char *key, uint32_t index); /* "<key><index>=" */
void kv_str(const char *key, const char *value);
void kv_dec(const char *key, uint64_t value);
void kv_hex(const char *key, uint64_t value);

/* outl(code, 0xf4): the VM ends with status (code << 1) | 1; then cli; hlt
   forever. */
void guest_exit(uint32_t code) __attribute__((noreturn));
/* Prints "FAIL: <what>" and exits with code 1 (status 3). */
void guest_fail(const char *what) __attribute__((noreturn));
/* Prints "done" and exits with code 0 (status 1). */
void guest_done(void) __attribute__((noreturn));

int str_eq(const char *a, const char *b);
int mem_eq(const void *a, const void *b, uint32_t n);
void mem_copy(void *dst, const void *src, uint32_t n);
uint32_t str_len(const char *s);
/* Whether `word` is one of the space-separated words of `s`. */
int has_word(const char *s, const char *word);

/* fw_cfg through its legacy ports (0x510 selector, 0x511 data): selects
   `key`, reads `len` bytes into `buf`. Returns the port accesses it made:
   1 + len. */
#define FWCFG_PORT_SELECTOR 0x510
#define FWCFG_PORT_DATA 0x511
uint32_t fwcfg_read(uint16_t key, void *buf, uint32_t len);

/* ACPI (1.0 forms). */
struct __attribute__((packed)) acpi_header {
  char signature[4];
  uint32_t length;
  uint8_t revision, checksum;
  char oem_id[6], oem_table_id[8];
  uint32_t oem_revision, creator_id, creator_revision;
};
/* The RSDP found by scanning [0xE0000, 0x100000) at 16-byte steps for
   "RSD PTR " whose first 20 bytes sum to 0; 0 when none. */
uint32_t acpi_find_rsdp(void);
/* Whether `n` bytes at `p` sum to 0 mod 256. */
int acpi_checksum_ok(const void *p, uint32_t n);
/* The RSDT's entry with `sig` (e.g. "FACP"), or null. Needs a valid RSDP. */
const struct acpi_header *acpi_find_table(uint32_t rsdp, const char sig[4]);
/* The FADT's PM_TMR_BLK, or 0 when there is no FADT. */
uint16_t acpi_pm_timer_port(void);

#define FADT_OFF_DSDT 40
#define FADT_OFF_PM1A_EVT_BLK 56
#define FADT_OFF_PM1A_CNT_BLK 64
#define FADT_OFF_PM_TMR_BLK 76
#define FADT_OFF_PM_TMR_LEN 91
#define FADT_OFF_FLAGS 112

#endif /* MINIVMM_TESTS_PC_GUESTS_PC_GUEST_H_ */
