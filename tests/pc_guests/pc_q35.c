/* The q35 machine (--machine q35 [--split-irqchip [--intel-iommu]] --edu)
   from the inside: PCI bus 0, QEMU's edu device, the Intel VT-d unit's DMA
   and interrupt remapping where there is one, and the IOAPIC (edge and level
   triggered: minivmm's own with the split irqchip, KVM's with the full
   one), on one vCPU (the boot CPU's local APIC: x2APIC where CPUID
   offers it, else xAPIC at 0xFEE00000, LINT0 masked so that no 8259
   behind it can interrupt: under QEMU SeaBIOS leaves its timer running
   there; the q35 machine has no PIC).
   1. PCI (config mechanism #1): function 0 of all 32 devices of bus 0
      (pci_functions); 00:00.0 the Q35 host bridge (host_bridge=8086:29c0
      class=0x060000); edu (1234:11e8, rev 0x10) found by the scan
      (edu_devfn); its BAR0, a 32-bit memory BAR (edu_bar0), sized by
      writing all-ones (edu_bar0_size=0x100000), restored and read back
      equal; its interrupt pin (A: edu_int_pin=1) and line (the IOAPIC pin
      its INTx drives: edu_int_line) read with byte reads; its MSI
      capability found through the capability list (edu_msi_cap, 64-bit,
      one vector, disabled).
   2. edu: memory decode and bus master on; ID 0x010000ed, the liveness
      register (~value), factorial(10) = 3628800 (its busy bit polled).
   3. The IOMMU, optional: the RSDT (an RSDP is required) either has a DMAR
      table (iommu=present: all of 3-7 below as written) or has none
      (iommu=absent: 3, 4 and 5 are skipped, no IOMMU register is touched,
      iommu_accesses=0, and 6, 6b and 7 run in the compatibility format,
      as they say). With the table: the ACPI DMAR table (checksum, one DRHD
      with INCLUDE_PCI_ALL: dmar_base=0xfed90000 haw=38 include_pci_all=1;
      every register access goes to the base the table names); VER, CAP
      (SAGAW 39-bit only, MGAW 38, SLLPS 2M and 1G, one fault recording
      register at FRO * 16), ECAP (QI, IR, no EIM); GSTS 0 at reset; the
      invalidation queue (one page, 256 descriptors), a root table whose bus
      0 entry points at a context table with edu's entry only (3-level
      second-level tables, domain 1), an interrupt remapping table (S = 7:
      256 entries, all not present); then QI, the root table pointer (and a
      context-cache and IOTLB global invalidation through the queue, with a
      wait descriptor), the interrupt remapping table pointer (and a global
      interrupt entry cache invalidation), translation and interrupt
      remapping enabled one at a time, each GSTS bit waited for
      (iommu_gsts=0xc7000000 at the end).
   4. DMA remapping, edu's DMA through it: IOVA 0x0 -> page A (RW), 0x1000
      -> page B (RW), 0x2000 -> page C (R only), 0x3000 not mapped. 64
      bytes of pattern from A into edu's buffer (IOVA 0) and back out to
      IOVA 0x1000: B holds the pattern (dma_roundtrip=ok), no fault. Then
      the fault event unmasked (FEDATA: vector 0xD0, FEADDR: this CPU's
      APIC) and the buffer written to IOVA 0x2000: C untouched, the fault
      recording register holds reason 0x5, edu's SID, page 0x2000, T=0 (a
      write); FSTS.PPF set; exactly one fault-event interrupt; F cleared
      (write 1), PPF clear after it. Then a read of IOVA 0x3000: reason
      0x6, T=1, page 0x3000, one more fault-event interrupt; F cleared.
   5. Queued invalidation: an IOTLB global invalidation and a wait
      descriptor with a status write: the status word written, IQH == IQT,
      FSTS.IQE clear.
   6. The IOAPIC, edge triggered (IOAPIC version 0x20, minivmm's and QEMU's
      own, or 0x11, KVM's; 24 pins, edu's pin masked at reset). With the IOMMU: IRTE 1 (vector 0xE1, fixed,
      physical, this CPU's APIC ID, edge, SVT 1 with edu's SID; the
      IOAPIC's messages carry no source ID, so it is not checked), edu's
      pin programmed in remappable format for index 1 (vector 0xE1, edge,
      unmasked). Without: edu's pin in compatibility format (vector 0xE1,
      fixed, edge, physical destination this CPU's APIC ID in bits 63:56,
      unmasked). Then edu's raise with MSI disabled: exactly one interrupt
      0xE1 (ir_ioapic_interrupts=1, the key either way); edu acked, the pin
      masked again.
   6b. The IOAPIC, level triggered: edu's pin programmed with trigger bit 15
      set, vector 0xE3, unmasked; with the IOMMU in remappable format for
      IRTE 5 (vector 0xE3, TM = 1, SVT 1 with edu's SID, then an IEC
      invalidation and a wait descriptor), without in compatibility format
      as in 6. edu's raise(1) with MSI disabled holds INTx high. 0xE3's
      handler does not ack edu on its first 2 invocations, only counts and
      writes the local APIC's EOI; the line being still high, the IOAPIC
      sends it again after each EOI (the machine sees KVM_EXIT_IOAPIC_EOI,
      clears remote IRR and redelivers). On the 3rd the handler acks edu
      (0x64 := 1, which lowers INTx) and then EOIs; after a settle delay no
      more came. Every EOI of 0xE3 is counted (level_eois), each one
      ioapic_eoi exit in minivmm's table, since KVM exits to the VMM at the
      EOI of a vector that a level-triggered IOAPIC entry sends. Prints
      level_interrupts=3, level_eois=3, level_remote_irr=0 (the entry read
      back after the last EOI); edu's interrupt status is 0 after; the pin
      masked again (left level triggered). Should 0xE3 come a 4th time,
      the handler masks the pin there so that a line that stays high
      cannot storm.
   7. MSI. With the IOMMU, interrupt remapping: IRTE 2 (vector 0xE2, SVT 1
      with edu's SID), edu's MSI with the remappable address for index 2,
      data 0, MSI enabled, raise: exactly one 0xE2; then index 3 (not
      present; 0xE5 counted as its vector): no interrupt, fault reason
      0x22; then IRTE 4 (vector 0xE4, SVT 1, a SID that is not edu's): no
      interrupt, reason 0x26. Each fault also raises exactly one
      fault-event interrupt; every IRTE change is followed by an IEC
      invalidation and a wait descriptor. Without: edu's MSI in
      compatibility format, address 0xFEE00000 | APIC ID << 12 (upper 0),
      data 0xE2 (fixed, edge), MSI enabled, raise: exactly one 0xE2; the
      remapping faults are not tried. ir_msi_interrupts=1 either way.
   8. Every access to PCI config space (each outl to 0xCF8 and each access
      to 0xCFC-0xCFF), to edu's BAR, to the IOMMU's registers and to the
      IOAPIC (IOREGSEL and IOWIN) goes through one counting helper, one
      instruction each (64-bit IOMMU registers as two 32-bit halves, low
      first), polling included, the accesses of 6b.'s handler included;
      nothing else touches them. The last line before q35=pass is
        pci_config_accesses=N edu_accesses=N iommu_accesses=N ioapic_accesses=N
      for a comparison with minivmm's per-device exit counts (mmio
      intel-iommu, absent without the IOMMU, mmio edu, mmio ioapic, pio
      pci-config); level_eois (printed before it) is the run's ioapic_eoi
      exits.
   Each outcome is printed as key=value lines. A wrong outcome prints a FAIL
   line and the guest goes on, exiting with a failing status at the end; a
   missing piece (no edu, no RSDP, a GSTS bit that never comes) prints its
   FAIL line and the counts and exits at once. Every wait is bounded by the
   TSC; once one has run out, later waits only look once.
   Under QEMU 7.2 (-M q35,kernel-irqchip=split -device
   intel-iommu,intremap=on,eim=off -device edu -device isa-debug-exit) all
   passes, 6b. included, except that the DRHD lists its devices instead of
   INCLUDE_PCI_ALL and that interrupt-remapping faults (0x22, 0x26) are
   only logged on QEMU's stderr, not recorded, so they raise no fault event
   either (and their bounded waits run out: timed_out=1). Without the IOMMU
   (-M q35,kernel-irqchip=split -device edu -device isa-debug-exit) all
   passes (iommu=absent); there SeaBIOS names edu's line 10, not 17. */
#include "pc_guest.h"

#define WAIT_TSC (1ull << 34)
#define SETTLE_TSC (1ull << 28)

#define SPURIOUS_VECTOR 0xff
#define FAULT_EVENT_VECTOR 0xd0
#define IOAPIC_VECTOR 0xe1
#define MSI_VECTOR 0xe2
#define LEVEL_VECTOR 0xe3
#define WRONG_SID_VECTOR 0xe4
#define NOT_PRESENT_VECTOR 0xe5 /* IRTE 3 stays zero: only counted */
#define LEVEL_ACK_AT 3 /* the level handler's invocation that acks edu */
#define LVT_MASKED (1u << 16)
#define STRAY 256 /* vec_count's slot for any other vector >= 32 */

/* PCI */
#define PCI_ADDRESS_PORT 0xcf8
#define PCI_DATA_PORT 0xcfc
#define PCI_CMD_MEMORY (1u << 1)
#define PCI_CMD_MASTER (1u << 2)
#define PCI_STATUS_CAPS (1u << 4)
#define PCI_CAP_MSI 0x05
#define MSI_CTRL_ENABLE 1u
#define MSI_CTRL_64BIT (1u << 7)
#define HOST_BRIDGE_ID 0x29c08086u
#define EDU_ID 0x11e81234u

/* edu */
#define EDU_REG_ID 0x00
#define EDU_REG_LIVENESS 0x04
#define EDU_REG_FACTORIAL 0x08
#define EDU_REG_STATUS 0x20
#define EDU_REG_IRQ_STATUS 0x24
#define EDU_REG_IRQ_RAISE 0x60
#define EDU_REG_IRQ_ACK 0x64
#define EDU_REG_DMA_SRC 0x80
#define EDU_REG_DMA_DST 0x88
#define EDU_REG_DMA_COUNT 0x90
#define EDU_REG_DMA_CMD 0x98
#define EDU_DMA_START 1u
#define EDU_DMA_TO_RAM 2u
#define EDU_BUFFER 0x40000u
#define EDU_STATUS_BUSY 1u
#define DMA_BYTES 64

/* VT-d registers */
#define VTD_VER 0x00
#define VTD_CAP 0x08
#define VTD_ECAP 0x10
#define VTD_GCMD 0x18
#define VTD_GSTS 0x1c
#define VTD_RTADDR 0x20
#define VTD_FSTS 0x34
#define VTD_FECTL 0x38
#define VTD_FEDATA 0x3c
#define VTD_FEADDR 0x40
#define VTD_IQH 0x80
#define VTD_IQT 0x88
#define VTD_IQA 0x90
#define VTD_IRTA 0xb8
#define GSTS_TE (1u << 31)
#define GSTS_RTP (1u << 30)
#define GSTS_QIE (1u << 26)
#define GSTS_IRE (1u << 25)
#define GSTS_IRTP (1u << 24)
#define GCMD_ONE_SHOT_CLEAR 0x96ffffffu /* GSTS without SRTP, SFL, WBF, SIRTP */
#define FSTS_PFO (1u << 0)
#define FSTS_PPF (1u << 1)
#define FSTS_IQE (1u << 4)
#define FECTL_IM (1u << 31)
#define FRCD_F (1u << 31) /* in the record's last dword */
#define FRCD_T (1u << 30)
#define IRT_SIZE_FIELD 7u /* 2^(7+1) = 256 entries */
#define DOMAIN_ID 1u
#define FR_WRITE 0x5
#define FR_READ 0x6
#define FR_IR_NOT_PRESENT 0x22
#define FR_IR_SID 0x26

/* invalidation descriptors (low qword) */
#define INV_CONTEXT_GLOBAL 0x11u
#define INV_IOTLB_GLOBAL 0x12u
#define INV_IEC_GLOBAL 0x04u
#define INV_WAIT_SW 0x25u /* type 5, status write */

/* IOAPIC */
#define IOAPIC_BASE 0xfec00000u
#define IOAPIC_REGSEL 0x00
#define IOAPIC_WIN 0x10
#define IOAPIC_REDIR_REMOTE_IRR (1u << 14)
#define IOAPIC_REDIR_LEVEL (1u << 15)
#define IOAPIC_REDIR_MASKED (1u << 16)

#define DMAR_BASE_EXPECTED 0xfed90000u

/* The counted accesses (8.); volatile, as 6b.'s handler counts too. */
static volatile uint32_t pci_config_accesses, edu_accesses, iommu_accesses, ioapic_accesses;

static uint32_t mmio_read(uint32_t address) {
  uint32_t v;
  __asm__ volatile("movl (%1), %0" : "=r"(v) : "r"(address) : "memory");
  return v;
}
static void mmio_write(uint32_t address, uint32_t v) {
  __asm__ volatile("movl %0, (%1)" ::"r"(v), "r"(address) : "memory");
}

static void cfg_select(uint32_t devfn, uint32_t off) {
  outl(PCI_ADDRESS_PORT, 0x80000000u | (devfn & 0xff) << 8 | (off & 0xfc));
  ++pci_config_accesses;
}
static uint32_t cfg_read32(uint32_t devfn, uint32_t off) {
  cfg_select(devfn, off);
  ++pci_config_accesses;
  return inl(PCI_DATA_PORT);
}
static uint16_t cfg_read16(uint32_t devfn, uint32_t off) {
  cfg_select(devfn, off);
  ++pci_config_accesses;
  return inw(PCI_DATA_PORT + (off & 2));
}
static uint8_t cfg_read8(uint32_t devfn, uint32_t off) {
  cfg_select(devfn, off);
  ++pci_config_accesses;
  return inb(PCI_DATA_PORT + (off & 3));
}
static void cfg_write32(uint32_t devfn, uint32_t off, uint32_t v) {
  cfg_select(devfn, off);
  ++pci_config_accesses;
  outl(PCI_DATA_PORT, v);
}
static void cfg_write16(uint32_t devfn, uint32_t off, uint16_t v) {
  cfg_select(devfn, off);
  ++pci_config_accesses;
  outw(PCI_DATA_PORT + (off & 2), v);
}

static uint32_t edu_base;
static uint32_t edu_read(uint32_t off) {
  ++edu_accesses;
  return mmio_read(edu_base + off);
}
static void edu_write(uint32_t off, uint32_t v) {
  ++edu_accesses;
  mmio_write(edu_base + off, v);
}

static uint32_t iommu_base;
static uint32_t iommu_read(uint32_t off) {
  ++iommu_accesses;
  return mmio_read(iommu_base + off);
}
static void iommu_write(uint32_t off, uint32_t v) {
  ++iommu_accesses;
  mmio_write(iommu_base + off, v);
}
static uint64_t iommu_read64(uint32_t off) {
  uint32_t lo = iommu_read(off);
  return (uint64_t)iommu_read(off + 4) << 32 | lo;
}
static void iommu_write64(uint32_t off, uint64_t v) {
  iommu_write(off, (uint32_t)v);
  iommu_write(off + 4, (uint32_t)(v >> 32));
}

static uint32_t ioapic_read(uint32_t reg) {
  ioapic_accesses += 2;
  mmio_write(IOAPIC_BASE + IOAPIC_REGSEL, reg);
  return mmio_read(IOAPIC_BASE + IOAPIC_WIN);
}
static void ioapic_write(uint32_t reg, uint32_t v) {
  ioapic_accesses += 2;
  mmio_write(IOAPIC_BASE + IOAPIC_REGSEL, reg);
  mmio_write(IOAPIC_BASE + IOAPIC_WIN, v);
}

/* Output and failures. */
static uint32_t failures;
static int timed_out;

static void put_hexw(uint32_t v, int digits) {
  static const char kDigits[] = "0123456789abcdef";
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) put_char(kDigits[(v >> shift) & 0xf]);
}
static void kv_hex32(const char *key, uint32_t v) { /* 0x and 8 digits */
  put_str(key);
  put_str("=0x");
  put_hexw(v, 8);
  put_char('\n');
}
static void kv_pair_hex(const char *prefix, const char *key, uint64_t v) {
  put_str(prefix);
  kv_hex(key, v);
}
static void kv_pair_dec(const char *prefix, const char *key, uint64_t v) {
  put_str(prefix);
  kv_dec(key, v);
}

static void check(int ok, const char *what) {
  if (ok) return;
  put_str("FAIL: ");
  put_str(what);
  put_char('\n');
  ++failures;
}

static void print_counts(void) {
  put_str("pci_config_accesses=");
  put_dec(pci_config_accesses);
  put_str(" edu_accesses=");
  put_dec(edu_accesses);
  put_str(" iommu_accesses=");
  put_dec(iommu_accesses);
  put_str(" ioapic_accesses=");
  put_dec(ioapic_accesses);
  put_char('\n');
}

static void __attribute__((noreturn)) fatal(const char *what) {
  put_str("FAIL: ");
  put_str(what);
  put_char('\n');
  print_counts();
  guest_exit(1);
}

/* Waits, bounded by the TSC. */
static void delay_tsc(uint64_t ticks) {
  uint64_t end = rdtsc() + ticks;
  while (rdtsc() < end) cpu_relax();
}
static uint64_t wait_end(void) { return rdtsc() + (timed_out ? 0 : WAIT_TSC); }
static int ran_out(uint64_t end) {
  if (rdtsc() <= end) return 0;
  timed_out = 1;
  return 1;
}

/* The local APIC and the interrupts. */
static int x2apic;
static uint32_t apic_id;
static volatile uint32_t vec_count[STRAY + 1];

static void apic_eoi(void) {
  if (x2apic)
    wrmsr(MSR_X2APIC_EOI, 0);
  else
    *(volatile uint32_t *)0xfee000b0u = 0;
}

void vector_handler(uint32_t vector) {
  ++vec_count[vector];
  apic_eoi();
}

/* The level-triggered entry's handler (6b.): counts; on its LEVEL_ACK_AT-th
   invocation acknowledges edu (which lowers INTx) first; then the EOI, each
   one counted. Should the interrupt come again after the ack (a line that
   stayed high), the pin is masked there so that it cannot storm. */
static volatile uint32_t level_eois, level_acked, level_pin_reg, level_storm_masked;
void level_handler(void) {
  uint32_t n = ++vec_count[LEVEL_VECTOR];
  if (n == LEVEL_ACK_AT) {
    edu_write(EDU_REG_IRQ_ACK, 1);
    level_acked = 1;
  } else if (n > LEVEL_ACK_AT && !level_storm_masked) {
    ioapic_write(level_pin_reg, LEVEL_VECTOR | IOAPIC_REDIR_LEVEL | IOAPIC_REDIR_MASKED);
    level_storm_masked = 1;
  }
  ++level_eois;
  apic_eoi();
}

void exception_handler(void) { fatal("an exception"); }

void isr_fault_event(void), isr_ioapic(void), isr_msi(void), isr_level(void), isr_not_present(void),
    isr_wrong_sid(void), isr_stray(void), isr_spurious(void), isr_exception(void);
#define VEC_STUB(name, n)                                                         \
  ".globl " #name "\n" #name ":\n  pushal\n  cld\n  pushl $" #n                   \
  "\n  call vector_handler\n  addl $4, %esp\n  popal\n  iret\n"
__asm__(VEC_STUB(isr_fault_event, 0xd0) VEC_STUB(isr_ioapic, 0xe1) VEC_STUB(isr_msi, 0xe2)
            VEC_STUB(isr_wrong_sid, 0xe4) VEC_STUB(isr_not_present, 0xe5)
                VEC_STUB(isr_stray, 256) ".globl isr_level, isr_spurious, isr_exception\n"
                                         "isr_level:\n  pushal\n  cld\n  call level_handler\n"
                                         "  popal\n  iret\n"
                                         "isr_spurious:\n  iret\n"
                                         "isr_exception:\n  cld\n  call exception_handler\n");

static void interrupts_init(void) {
  for (uint32_t v = 0; v < 32; ++v) idt_set_gate(v, isr_exception);
  for (uint32_t v = 32; v < 256; ++v) idt_set_gate(v, isr_stray);
  idt_set_gate(FAULT_EVENT_VECTOR, isr_fault_event);
  idt_set_gate(IOAPIC_VECTOR, isr_ioapic);
  idt_set_gate(MSI_VECTOR, isr_msi);
  idt_set_gate(LEVEL_VECTOR, isr_level);
  idt_set_gate(NOT_PRESENT_VECTOR, isr_not_present);
  idt_set_gate(WRONG_SID_VECTOR, isr_wrong_sid);
  idt_set_gate(SPURIOUS_VECTOR, isr_spurious);
  idt_load();
  uint32_t r[4];
  cpuid(1, 0, r);
  x2apic = (r[2] & (1u << 21)) != 0;
  if (x2apic) {
    x2apic_enable(SPURIOUS_VECTOR);
    apic_id = (uint32_t)rdmsr(MSR_X2APIC_ID);
    wrmsr(0x835, LVT_MASKED); /* LINT0 */
  } else {
    wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_BASE_EN);
    *(volatile uint32_t *)0xfee000f0u = APIC_SVR_ENABLE | SPURIOUS_VECTOR;
    *(volatile uint32_t *)0xfee00080u = 0;
    apic_id = *(volatile uint32_t *)0xfee00020u >> 24;
    *(volatile uint32_t *)0xfee00350u = LVT_MASKED; /* LINT0 */
  }
  kv_dec("x2apic", x2apic);
  kv_dec("apic_id", apic_id);
  if (apic_id > 0xff) fatal("the boot CPU's APIC ID does not fit an xAPIC destination");
  irq_enable();
}

/* Waits until vec_count[vector] reaches n, then lets a later one come too:
   whether exactly n came. */
static int wait_interrupts(uint32_t vector, uint32_t n) {
  uint64_t end = wait_end();
  while (vec_count[vector] < n && !ran_out(end)) cpu_relax();
  delay_tsc(SETTLE_TSC);
  return vec_count[vector] == n;
}

static uint32_t other_interrupts(void) { /* all but the fault events */
  return vec_count[IOAPIC_VECTOR] + vec_count[MSI_VECTOR] + vec_count[LEVEL_VECTOR] +
         vec_count[NOT_PRESENT_VECTOR] +
         vec_count[WRONG_SID_VECTOR] + vec_count[STRAY];
}

/* 1. PCI */
static uint32_t edu_devfn, edu_sid, edu_pin, edu_line, msi_cap;

static void put_id(uint32_t id) {
  put_hexw(id & 0xffff, 4);
  put_char(':');
  put_hexw(id >> 16, 4);
}

static void test_pci(void) {
  uint32_t functions = 0, host_id = 0xffffffffu, host_class = 0;
  int found = 0;
  for (uint32_t dev = 0; dev < 32; ++dev) {
    uint32_t id = cfg_read32(dev << 3, 0x00);
    if ((id & 0xffff) == 0xffff) continue;
    ++functions;
    if (dev == 0) host_id = id;
    if (id == EDU_ID && !found) {
      found = 1;
      edu_devfn = dev << 3;
    }
  }
  kv_dec("pci_functions", functions);
  if (host_id != 0xffffffffu) host_class = cfg_read32(0, 0x08) >> 8;
  put_str("host_bridge=");
  put_id(host_id);
  put_str(" class=0x");
  put_hexw(host_class, 6);
  put_char('\n');
  check(host_id == HOST_BRIDGE_ID && host_class == 0x060000,
        "00:00.0 is not the Q35 host bridge 8086:29c0 class 0x060000");
  if (!found) fatal("no edu device (1234:11e8) on bus 0");
  edu_sid = edu_devfn; /* bus 0 */
  put_str("edu_devfn=0x");
  put_hexw(edu_devfn, 2);
  put_char('\n');

  uint32_t rev = cfg_read32(edu_devfn, 0x08) & 0xff;
  kv_hex("edu_revision", rev);
  check(rev == 0x10, "edu's revision is not 0x10");

  uint16_t cmd = cfg_read16(edu_devfn, 0x04);
  kv_hex("edu_command_reset", cmd);
  uint32_t bar = cfg_read32(edu_devfn, 0x10);
  cfg_write32(edu_devfn, 0x10, 0xffffffffu);
  uint32_t sized = cfg_read32(edu_devfn, 0x10);
  cfg_write32(edu_devfn, 0x10, bar);
  uint32_t restored = cfg_read32(edu_devfn, 0x10);
  uint32_t size = ~(sized & ~0xfu) + 1;
  edu_base = bar & ~0xfu;
  kv_hex("edu_bar0", bar);
  kv_hex("edu_bar0_size", size);
  kv_dec("edu_bar0_restored", restored == bar);
  check((bar & 0xf) == 0, "edu's BAR0 is not a 32-bit non-prefetchable memory BAR");
  check(size == 0x100000, "edu's BAR0 is not 1 MiB");
  check(restored == bar, "edu's BAR0 did not read back as restored");
  if (edu_base == 0 || (edu_base & (size - 1)) != 0 || size == 0)
    fatal("edu's BAR0 is unassigned or misaligned");

  edu_pin = cfg_read8(edu_devfn, 0x3d);
  edu_line = cfg_read8(edu_devfn, 0x3c);
  kv_dec("edu_int_pin", edu_pin);
  kv_dec("edu_int_line", edu_line);
  check(edu_pin == 1, "edu's interrupt pin is not INTA");

  uint16_t status = cfg_read16(edu_devfn, 0x06);
  if (status & PCI_STATUS_CAPS) {
    uint32_t ptr = cfg_read8(edu_devfn, 0x34) & 0xfc;
    for (uint32_t i = 0; i < 48 && ptr >= 0x40; ++i) {
      if (cfg_read8(edu_devfn, ptr) == PCI_CAP_MSI) {
        msi_cap = ptr;
        break;
      }
      ptr = cfg_read8(edu_devfn, ptr + 1) & 0xfc;
    }
  }
  kv_hex("edu_msi_cap", msi_cap);
  if (msi_cap == 0) fatal("edu has no MSI capability in its list");
  uint16_t ctrl = cfg_read16(edu_devfn, msi_cap + 2);
  kv_dec("edu_msi_64bit", (ctrl & MSI_CTRL_64BIT) != 0);
  kv_dec("edu_msi_vectors", 1u << ((ctrl >> 1) & 7));
  kv_dec("edu_msi_enabled", ctrl & MSI_CTRL_ENABLE);
  check((ctrl & MSI_CTRL_64BIT) && ((ctrl >> 1) & 7) == 0 && !(ctrl & MSI_CTRL_ENABLE),
        "edu's MSI is not 64-bit, one vector, disabled");

  cfg_write16(edu_devfn, 0x04, cmd | PCI_CMD_MEMORY | PCI_CMD_MASTER);
}

/* 2. edu */
static int edu_wait_clear(uint32_t reg, uint32_t bit) {
  uint64_t end = wait_end();
  while (edu_read(reg) & bit)
    if (ran_out(end)) return 0;
  return 1;
}

static void test_edu(void) {
  uint32_t id = edu_read(EDU_REG_ID);
  kv_hex32("edu_mmio_id", id);
  check(id == 0x010000edu, "edu's ID register is not 0x010000ed");
  edu_write(EDU_REG_LIVENESS, 0x12345678u);
  uint32_t live = edu_read(EDU_REG_LIVENESS);
  kv_hex("edu_liveness", live);
  check(live == ~0x12345678u, "edu's liveness register is not the inverse");
  edu_write(EDU_REG_FACTORIAL, 10);
  int done = edu_wait_clear(EDU_REG_STATUS, EDU_STATUS_BUSY);
  uint32_t fact = edu_read(EDU_REG_FACTORIAL);
  kv_dec("edu_factorial", fact);
  check(done && fact == 3628800, "edu's factorial(10) is not 3628800");
  uint32_t irq = edu_read(EDU_REG_IRQ_STATUS);
  kv_hex("edu_irq_status", irq);
  check(irq == 0, "edu's interrupt status is not 0");
}

/* 3. The IOMMU and its structures (paging is off: addresses are physical). */
static uint64_t root_table[512] __attribute__((aligned(4096)));
static uint64_t context_table[512] __attribute__((aligned(4096)));
static uint64_t sl_l3[512] __attribute__((aligned(4096)));
static uint64_t sl_l2[512] __attribute__((aligned(4096)));
static uint64_t sl_l1[512] __attribute__((aligned(4096)));
static uint64_t inv_queue[512] __attribute__((aligned(4096)));
static uint64_t irt[512] __attribute__((aligned(4096)));
static volatile uint8_t page_a[4096] __attribute__((aligned(4096)));
static volatile uint8_t page_b[4096] __attribute__((aligned(4096)));
static volatile uint8_t page_c[4096] __attribute__((aligned(4096)));
static volatile uint32_t qi_status __attribute__((aligned(8)));
static uint32_t iq_tail, fault_reg;

static void zero64(uint64_t *p) {
  for (uint32_t i = 0; i < 512; ++i) p[i] = 0;
}

/* Whether the RSDT has a DMAR table (iommu=present or absent); with one,
   its DRHD's register base becomes iommu_base. */
static int iommu;
static int find_dmar(void) {
  uint32_t rsdp = acpi_find_rsdp();
  if (rsdp == 0) fatal("no RSDP");
  const struct acpi_header *dmar = acpi_find_table(rsdp, "DMAR");
  kv_str("iommu", dmar ? "present" : "absent");
  if (dmar == 0) return 0;
  check(acpi_checksum_ok(dmar, dmar->length), "the DMAR table's checksum");
  const uint8_t *p = (const uint8_t *)dmar;
  uint32_t haw = p[36], drhds = 0, include_all = 0;
  uint64_t base = 0;
  for (uint32_t off = 48; off + 4 <= dmar->length;) {
    const uint8_t *e = p + off;
    uint32_t type = *(const uint16_t *)e, len = *(const uint16_t *)(e + 2);
    if (len < 4) fatal("a DMAR structure shorter than 4 bytes");
    if (type == 0 && len >= 16) {
      if (drhds++ == 0) {
        include_all = e[4] & 1;
        base = *(const uint64_t *)(e + 8);
      }
    }
    off += len;
  }
  put_str("dmar_base=");
  put_hex(base);
  put_str(" haw=");
  put_dec(haw);
  put_str(" include_pci_all=");
  put_dec(include_all);
  put_char('\n');
  kv_dec("dmar_drhds", drhds);
  check(drhds == 1, "the DMAR table has not exactly one DRHD");
  check(base == DMAR_BASE_EXPECTED, "the DRHD's register base is not 0xfed90000");
  check(haw == 38, "the DMAR's host address width is not 38 (39 bits)");
  check(include_all == 1, "the DRHD is not INCLUDE_PCI_ALL");
  if (base == 0 || (base >> 32) != 0 || (base & 0xfff) != 0) fatal("no usable DRHD register base");
  iommu_base = (uint32_t)base;
  return 1;
}

/* Sets one GCMD bit the way the VT-d specification says (GSTS without its
   one-shot bits, plus the command) and waits for its GSTS bit. */
static void gcmd_set(uint32_t bit, const char *what) {
  uint32_t gsts = iommu_read(VTD_GSTS);
  iommu_write(VTD_GCMD, (gsts & GCMD_ONE_SHOT_CLEAR) | bit);
  uint64_t end = wait_end();
  while (!(iommu_read(VTD_GSTS) & bit))
    if (ran_out(end)) fatal(what);
}

static void qi_push(uint64_t lo, uint64_t hi) {
  inv_queue[2 * iq_tail] = lo;
  inv_queue[2 * iq_tail + 1] = hi;
  iq_tail = (iq_tail + 1) % 256;
}

/* Appends a wait descriptor writing `value` to qi_status, moves IQT and
   waits for the status write: whether it came. */
static int qi_submit_and_wait(uint32_t value) {
  qi_status = 0;
  qi_push(INV_WAIT_SW | (uint64_t)value << 32, (uint32_t)&qi_status);
  iommu_write(VTD_IQT, iq_tail << 4);
  uint64_t end = wait_end();
  while (qi_status != value)
    if (ran_out(end)) return 0;
  return 1;
}

static void iec_invalidate(uint32_t value) {
  qi_push(INV_IEC_GLOBAL, 0);
  check(qi_submit_and_wait(value), "an interrupt entry cache invalidation's wait never completed");
}

static void test_iommu_setup(void) {
  iommu = find_dmar();
  if (!iommu) return;
  uint32_t ver = iommu_read(VTD_VER);
  kv_hex("iommu_version", ver);
  check(((ver >> 4) & 0xf) >= 1, "VT-d major version below 1");
  uint64_t cap = iommu_read64(VTD_CAP), ecap = iommu_read64(VTD_ECAP);
  kv_hex("iommu_cap", cap);
  kv_hex("iommu_ecap", ecap);
  uint32_t sagaw = (uint32_t)(cap >> 8) & 0x1f, mgaw = ((uint32_t)(cap >> 16) & 0x3f) + 1;
  uint32_t sllps = (uint32_t)(cap >> 34) & 0xf, fro = (uint32_t)(cap >> 24) & 0x3ff;
  uint32_t nfr = ((uint32_t)(cap >> 40) & 0xff) + 1;
  kv_hex("cap_sagaw", sagaw);
  kv_dec("cap_mgaw", mgaw - 1);
  kv_hex("cap_sllps", sllps);
  kv_dec("cap_nfr", nfr);
  kv_hex("cap_fro", fro);
  check(sagaw == 0x2, "CAP.SAGAW is not 39-bit only");
  check(mgaw == 39, "CAP.MGAW is not 38");
  check(sllps == 0x3, "CAP.SLLPS is not 2M and 1G");
  check(nfr == 1, "not exactly one fault recording register");
  if (fro == 0 || fro * 16 + 16 > 4096) fatal("the fault recording register is not in the register page");
  fault_reg = fro * 16;
  uint32_t qi = (uint32_t)(ecap >> 1) & 1, ir = (uint32_t)(ecap >> 3) & 1,
           eim = (uint32_t)(ecap >> 4) & 1;
  kv_dec("ecap_qi", qi);
  kv_dec("ecap_ir", ir);
  kv_dec("ecap_eim", eim);
  if (!qi || !ir) fatal("no queued invalidation or interrupt remapping in ECAP");
  check(!eim, "ECAP.EIM set");
  uint32_t gsts = iommu_read(VTD_GSTS);
  kv_hex("iommu_gsts_reset", gsts);
  check(gsts == 0, "GSTS is not 0 at reset");

  /* The structures: edu's context only; IOVA 0/0x1000 RW, 0x2000 R. */
  zero64(root_table);
  zero64(context_table);
  zero64(sl_l3);
  zero64(sl_l2);
  zero64(sl_l1);
  zero64(inv_queue);
  zero64(irt);
  root_table[0] = (uint32_t)context_table | 1u;
  context_table[2 * edu_devfn] = (uint32_t)sl_l3 | 1u;
  context_table[2 * edu_devfn + 1] = 1u | DOMAIN_ID << 8; /* AW 1: 39 bits */
  sl_l3[0] = (uint32_t)sl_l2 | 3u;
  sl_l2[0] = (uint32_t)sl_l1 | 3u;
  sl_l1[0] = (uint32_t)page_a | 3u;
  sl_l1[1] = (uint32_t)page_b | 3u;
  sl_l1[2] = (uint32_t)page_c | 1u;
  __asm__ volatile("" ::: "memory");

  iommu_write64(VTD_IQA, (uint32_t)inv_queue); /* 256 128-bit descriptors */
  iommu_write64(VTD_RTADDR, (uint32_t)root_table);
  iommu_write64(VTD_IRTA, (uint32_t)irt | IRT_SIZE_FIELD);

  gcmd_set(GSTS_QIE, "QIES never set");
  gcmd_set(GSTS_RTP, "RTPS never set");
  qi_push(INV_CONTEXT_GLOBAL, 0);
  qi_push(INV_IOTLB_GLOBAL, 0);
  check(qi_submit_and_wait(0x11), "the context-cache and IOTLB invalidation's wait never completed");
  gcmd_set(GSTS_IRTP, "IRTPS never set");
  iec_invalidate(0x12);
  gcmd_set(GSTS_TE, "TES never set");
  gcmd_set(GSTS_IRE, "IRES never set");
  gsts = iommu_read(VTD_GSTS);
  kv_hex("iommu_gsts", gsts);
  check(gsts == (GSTS_TE | GSTS_RTP | GSTS_QIE | GSTS_IRE | GSTS_IRTP),
        "GSTS is not TES|RTPS|QIES|IRES|IRTPS after the enables");
}

/* 4. DMA remapping */
static int edu_dma(uint32_t src, uint32_t dst, uint32_t to_ram) {
  edu_write(EDU_REG_DMA_SRC, src);
  edu_write(EDU_REG_DMA_DST, dst);
  edu_write(EDU_REG_DMA_COUNT, DMA_BYTES);
  edu_write(EDU_REG_DMA_CMD, EDU_DMA_START | (to_ram ? EDU_DMA_TO_RAM : 0));
  return edu_wait_clear(EDU_REG_DMA_CMD, EDU_DMA_START);
}

struct fault_record {
  uint64_t address;
  uint32_t sid, reason, t, f;
};

/* Waits for F in the fault recording register, then reads the record. */
static int read_fault(struct fault_record *r) {
  uint64_t end = wait_end();
  int seen = 1;
  while (!(iommu_read(fault_reg + 12) & FRCD_F))
    if (ran_out(end)) {
      seen = 0;
      break;
    }
  uint64_t lo = iommu_read64(fault_reg);
  uint32_t hi0 = iommu_read(fault_reg + 8), hi1 = iommu_read(fault_reg + 12);
  r->address = lo & ~0xfffull;
  r->sid = hi0 & 0xffff;
  r->reason = hi1 & 0xff;
  r->t = (hi1 & FRCD_T) != 0;
  r->f = (hi1 & FRCD_F) != 0;
  return seen;
}

/* One expected fault: its record (prefix_fault_*), FSTS.PPF, exactly one
   more fault-event interrupt, then F cleared and PPF with it. `address`
   and `t` are checked when `dma` (interrupt-remapping faults leave them
   unspecified here). */
static uint32_t fault_events_expected;
static void expect_fault(const char *prefix, uint32_t reason, int dma, uint64_t address, uint32_t t) {
  struct fault_record r;
  int seen = read_fault(&r);
  uint32_t fsts = iommu_read(VTD_FSTS);
  ++fault_events_expected;
  int one_event = wait_interrupts(FAULT_EVENT_VECTOR, fault_events_expected);
  kv_pair_dec(prefix, "_fault", seen);
  kv_pair_hex(prefix, "_fault_reason", r.reason);
  kv_pair_hex(prefix, "_fault_sid", r.sid);
  if (dma) {
    kv_pair_hex(prefix, "_fault_addr", r.address);
    kv_pair_dec(prefix, "_fault_t", r.t);
  }
  kv_pair_dec(prefix, "_fault_ppf", (fsts & FSTS_PPF) != 0);
  kv_pair_dec(prefix, "_fault_pfo", (fsts & FSTS_PFO) != 0);
  uint32_t events = vec_count[FAULT_EVENT_VECTOR];
  kv_pair_dec(prefix, "_fault_events",
              events >= fault_events_expected - 1 ? events - (fault_events_expected - 1) : 0);
  check(seen, "no fault was recorded");
  check(r.reason == reason, "the fault reason is not the expected one");
  check(r.sid == edu_sid, "the fault's source ID is not edu's");
  if (dma) check(r.address == address && r.t == t, "the fault's address or type is wrong");
  check((fsts & FSTS_PPF) && !(fsts & FSTS_PFO), "FSTS.PPF not set or PFO set with one fault");
  check(one_event, "not exactly one fault-event interrupt for the fault");
  iommu_write(fault_reg + 12, FRCD_F);
  uint32_t after = iommu_read(VTD_FSTS);
  kv_pair_dec(prefix, "_fault_cleared", !(after & FSTS_PPF));
  check(!(after & FSTS_PPF), "FSTS.PPF still set after F was cleared");
}

static void test_dma(void) {
  for (uint32_t i = 0; i < 4096; ++i) {
    page_a[i] = (uint8_t)(0xa5 ^ (i * 7));
    page_b[i] = 0;
    page_c[i] = 0xcc;
  }
  int done = edu_dma(0x0, EDU_BUFFER, 0) && edu_dma(EDU_BUFFER, 0x1000, 1);
  int same = 1;
  for (uint32_t i = 0; i < 4096; ++i)
    if (page_b[i] != (i < DMA_BYTES ? page_a[i] : 0)) same = 0;
  uint32_t fsts = iommu_read(VTD_FSTS);
  kv_str("dma_roundtrip", done && same ? "ok" : "bad");
  kv_hex("dma_roundtrip_fsts", fsts);
  check(done && same, "page B does not hold page A's pattern after the round trip");
  check(fsts == 0, "a fault was recorded for the mapped round trip");

  /* The fault event: vector FAULT_EVENT_VECTOR to this CPU. */
  uint32_t fectl = iommu_read(VTD_FECTL);
  kv_hex("fectl_reset", fectl);
  check(fectl == FECTL_IM, "FECTL is not IM at reset");
  iommu_write(VTD_FEDATA, FAULT_EVENT_VECTOR);
  iommu_write(VTD_FEADDR, 0xfee00000u | apic_id << 12);
  iommu_write(VTD_FECTL, 0);

  done = edu_dma(EDU_BUFFER, 0x2000, 1);
  int untouched = 1;
  for (uint32_t i = 0; i < 4096; ++i)
    if (page_c[i] != 0xcc) untouched = 0;
  kv_dec("ro_dma_done", done);
  kv_dec("ro_page_untouched", untouched);
  check(done, "edu's DMA to a read-only page never completed");
  check(untouched, "a DMA write through a read-only mapping reached the page");
  expect_fault("ro", FR_WRITE, 1, 0x2000, 0);

  done = edu_dma(0x3000, EDU_BUFFER, 0);
  kv_dec("unmapped_dma_done", done);
  check(done, "edu's DMA from an unmapped IOVA never completed");
  expect_fault("unmapped", FR_READ, 1, 0x3000, 1);
}

/* 5. Queued invalidation */
static void test_qi(void) {
  qi_push(INV_IOTLB_GLOBAL, 0);
  int written = qi_submit_and_wait(0x5a5a0001u);
  uint32_t head = iommu_read(VTD_IQH), tail = iommu_read(VTD_IQT), fsts = iommu_read(VTD_FSTS);
  kv_dec("qi_status_written", written);
  kv_dec("qi_head_equals_tail", head == tail);
  kv_dec("qi_iqe", (fsts & FSTS_IQE) != 0);
  check(written, "the wait descriptor's status was not written");
  check(head == tail && tail == iq_tail << 4, "IQH is not IQT after the queue ran");
  check(!(fsts & FSTS_IQE), "FSTS.IQE set");
}

/* 6., 6b. and 7. Interrupts: remapped with the IOMMU, compatibility format
   without. */
static void set_irte(uint32_t index, uint32_t vector, uint32_t sid, uint32_t level) {
  irt[2 * index + 1] = sid | 1u << 18; /* SQ 0, SVT 1: the full SID */
  /* P, fixed, physical, TM (bit 4) = level */
  irt[2 * index] = 1u | (level ? 1u << 4 : 0) | vector << 16 | (uint64_t)apic_id << 40;
  __asm__ volatile("" ::: "memory");
  iec_invalidate(0x100 + index);
}

static uint32_t remappable_msi_address(uint32_t index) {
  return 0xfee00000u | (index & 0x7fff) << 5 | 1u << 4 | ((index >> 15) & 1) << 2;
}

/* A redirection entry's high dword: remappable format (bit 48) with the
   index in 63:49 (index bit 15 goes in low dword bit 11: always 0 here), or
   a physical destination in 63:56. */
static uint32_t redir_high(uint32_t irte_index) {
  return iommu ? 1u << 16 | (irte_index & 0x7fff) << 17 : apic_id << 24;
}

static void edu_raise_and_ack(uint32_t vector, uint32_t want, const char *key, const char *what) {
  uint32_t before = vec_count[vector];
  edu_write(EDU_REG_IRQ_RAISE, 1);
  int exact = wait_interrupts(vector, before + want);
  uint32_t irq = edu_read(EDU_REG_IRQ_STATUS);
  edu_write(EDU_REG_IRQ_ACK, 1);
  uint32_t acked = edu_read(EDU_REG_IRQ_STATUS);
  kv_dec(key, vec_count[vector] - before);
  check(exact, what);
  check(irq == 1 && acked == 0, "edu's interrupt status is not 1 raised and 0 acked");
}

static void check_no_fault(const char *what) {
  if (!iommu) return;
  uint32_t fsts = iommu_read(VTD_FSTS);
  check(fsts == 0, what);
}

static uint32_t edu_redir_reg; /* 0 when edu's line is no IOAPIC pin */

static void test_ioapic(void) {
  uint32_t ver = ioapic_read(0x01);
  uint32_t pins = ((ver >> 16) & 0xff) + 1;
  kv_hex("ioapic_version", ver & 0xff);
  kv_dec("ioapic_pins", pins);
  /* 0x20 is minivmm's and QEMU's own IOAPIC (the split irqchip), 0x11
     KVM's in-kernel one (the full irqchip); the guest uses no register only
     one of them has. */
  check(((ver & 0xff) == 0x20 || (ver & 0xff) == 0x11) && pins == 24,
        "the IOAPIC is not version 0x20 or 0x11 with 24 pins");
  if (edu_line >= pins) {
    check(0, "edu's interrupt line is no IOAPIC pin");
    return;
  }
  uint32_t reg = 0x10 + 2 * edu_line;
  edu_redir_reg = reg;
  uint32_t lo = ioapic_read(reg);
  kv_dec("ioapic_pin_masked_at_reset", (lo & IOAPIC_REDIR_MASKED) != 0);
  check(lo & IOAPIC_REDIR_MASKED, "edu's IOAPIC pin is not masked at reset");

  if (iommu) set_irte(1, IOAPIC_VECTOR, edu_sid, 0);
  /* Edge, active high, fixed, physical, unmasked; remappable: the vector
     is the IRTE's. */
  ioapic_write(reg + 1, redir_high(1));
  ioapic_write(reg, IOAPIC_VECTOR);
  edu_raise_and_ack(IOAPIC_VECTOR, 1, "ir_ioapic_interrupts",
                    iommu ? "not exactly one remapped interrupt from the IOAPIC"
                          : "not exactly one interrupt from the IOAPIC");
  ioapic_write(reg, IOAPIC_VECTOR | IOAPIC_REDIR_MASKED);
  check_no_fault("a fault was recorded for the IOAPIC's remapped interrupt");
}

/* 6b. The same pin level-triggered: redelivered at each EOI while edu holds
   its line high; level_handler acks edu on its LEVEL_ACK_AT-th run. */
static void test_level(void) {
  if (edu_redir_reg == 0) return;
  uint32_t reg = edu_redir_reg;
  level_pin_reg = reg;
  if (iommu) set_irte(5, LEVEL_VECTOR, edu_sid, 1);
  ioapic_write(reg + 1, redir_high(5));
  ioapic_write(reg, LEVEL_VECTOR | IOAPIC_REDIR_LEVEL);
  uint32_t before = edu_read(EDU_REG_IRQ_STATUS);
  edu_write(EDU_REG_IRQ_RAISE, 1);
  int exact = wait_interrupts(LEVEL_VECTOR, LEVEL_ACK_AT);
  uint32_t interrupts = vec_count[LEVEL_VECTOR], eois = level_eois, acked = level_acked;
  if (!acked) edu_write(EDU_REG_IRQ_ACK, 1); /* lower INTx for the steps after */
  uint32_t after = edu_read(EDU_REG_IRQ_STATUS);
  uint32_t lo = ioapic_read(reg);
  ioapic_write(reg, LEVEL_VECTOR | IOAPIC_REDIR_LEVEL | IOAPIC_REDIR_MASKED);
  kv_dec("level_interrupts", interrupts);
  kv_dec("level_eois", eois);
  kv_dec("level_remote_irr", (lo & IOAPIC_REDIR_REMOTE_IRR) != 0);
  check(before == 0, "edu's interrupt status is not 0 before the level-triggered raise");
  check(exact && interrupts == LEVEL_ACK_AT,
        "not exactly 3 level-triggered interrupts (one, and one more after each of 2 EOIs "
        "with the line still high)");
  check(eois == interrupts, "not one EOI per level-triggered interrupt");
  check(acked && after == 0, "edu's interrupt status is not 0 after the handler's ack");
  check(!(lo & IOAPIC_REDIR_REMOTE_IRR), "remote IRR still set after the last EOI");
  check_no_fault("a fault was recorded for the IOAPIC's level-triggered interrupt");
}

static void test_msi(void) {
  if (iommu) {
    set_irte(2, MSI_VECTOR, edu_sid, 0);
    cfg_write32(edu_devfn, msi_cap + 4, remappable_msi_address(2));
    cfg_write32(edu_devfn, msi_cap + 8, 0);
    cfg_write16(edu_devfn, msi_cap + 12, 0);
  } else {
    cfg_write32(edu_devfn, msi_cap + 4, 0xfee00000u | apic_id << 12);
    cfg_write32(edu_devfn, msi_cap + 8, 0);
    cfg_write16(edu_devfn, msi_cap + 12, MSI_VECTOR); /* fixed, edge */
  }
  uint16_t ctrl = cfg_read16(edu_devfn, msi_cap + 2);
  cfg_write16(edu_devfn, msi_cap + 2, ctrl | MSI_CTRL_ENABLE);
  edu_raise_and_ack(MSI_VECTOR, 1, "ir_msi_interrupts",
                    iommu ? "not exactly one remapped MSI" : "not exactly one MSI");
  check_no_fault("a fault was recorded for the remapped MSI");
  if (iommu) {
    /* IRTE 3: not present. */
    uint32_t others = other_interrupts();
    cfg_write32(edu_devfn, msi_cap + 4, remappable_msi_address(3));
    edu_raise_and_ack(NOT_PRESENT_VECTOR, 0, "ir_not_present_interrupts",
                      "an MSI through a not-present IRTE was delivered");
    check(other_interrupts() == others, "an MSI through a not-present IRTE raised some interrupt");
    expect_fault("ir_not_present", FR_IR_NOT_PRESENT, 0, 0, 0);

    /* IRTE 4: another source ID. */
    set_irte(4, WRONG_SID_VECTOR, edu_sid ^ 1, 0);
    others = other_interrupts();
    cfg_write32(edu_devfn, msi_cap + 4, remappable_msi_address(4));
    edu_raise_and_ack(WRONG_SID_VECTOR, 0, "ir_sid_mismatch_interrupts",
                      "an MSI through an IRTE for another source ID was delivered");
    check(other_interrupts() == others, "an MSI with a mismatched source ID raised some interrupt");
    expect_fault("ir_sid_mismatch", FR_IR_SID, 0, 0, 0);
  }
  cfg_write16(edu_devfn, msi_cap + 2, ctrl & ~MSI_CTRL_ENABLE);
}

void guest_main(uint32_t magic, const struct multiboot_info *mbi) {
  (void)magic;
  (void)mbi;
  interrupts_init();
  test_pci();
  test_edu();
  test_iommu_setup();
  if (iommu) {
    test_dma();
    test_qi();
  }
  test_ioapic();
  test_level();
  test_msi();
  irq_disable();
  kv_dec("fault_event_interrupts", vec_count[FAULT_EVENT_VECTOR]);
  kv_dec("stray_interrupts", vec_count[STRAY]);
  kv_dec("timed_out", timed_out);
  check(vec_count[FAULT_EVENT_VECTOR] == fault_events_expected, "fault-event interrupts miscounted");
  check(vec_count[STRAY] == 0, "an interrupt on an unexpected vector");
  check(!timed_out, "a bounded wait ran out");
  print_counts();
  if (failures) guest_exit(1);
  kv_str("q35", "pass");
  guest_done();
}
