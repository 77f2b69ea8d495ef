/* Hyper-V's enlightenments (VmConfig::hyperv) from the inside: the
   hypervisor leaves (Hyper-V's vendor and maximum at 0x40000000, KVM's own
   moved to 0x40000100), the features leaf's SynIC and reference-counter
   bits, the partition reference counter read twice, and SynIC turned on
   by its three control MSRs (SCONTROL, SIMP, SIEFP), each of which KVM
   reports to the VMM: synic_control_writes is the exact number of such
   exits. Without enlightenments it prints the leaves only (KVM's own at
   0x40000000). */
#include "pc_guest.h"

#define HV_CPUID_VENDOR 0x40000000u
#define HV_CPUID_FEATURES 0x40000003u
#define KVM_CPUID_BESIDE_HV 0x40000100u
#define HV_FEATURE_TIME_REF_COUNT (1u << 1)
#define HV_FEATURE_SYNIC (1u << 2)
#define HV_MSR_TIME_REF_COUNT 0x40000020u
#define HV_MSR_SCONTROL 0x40000080u
#define HV_MSR_SIEFP 0x40000082u
#define HV_MSR_SIMP 0x40000083u
#define HV_SYNIC_ENABLE 1u

static uint8_t synic_pages[2][4096] __attribute__((aligned(4096)));

static void kv_vendor(const char *key, const char *max_key, uint32_t leaf) {
  uint32_t r[4];
  cpuid(leaf, 0, r);
  char vendor[13];
  mem_copy(vendor, &r[1], 4);
  mem_copy(vendor + 4, &r[2], 4);
  mem_copy(vendor + 8, &r[3], 4);
  vendor[12] = 0;
  put_str(key);
  put_char('=');
  put_strn(vendor, 12);
  put_char('\n');
  kv_hex(max_key, r[0]);
}

void guest_main(uint32_t magic, const struct multiboot_info *mbi) {
  (void)magic;
  (void)mbi;
  kv_vendor("vendor_40000000", "max_40000000", HV_CPUID_VENDOR);
  kv_vendor("vendor_40000100", "max_40000100", KVM_CPUID_BESIDE_HV);
  uint32_t r[4];
  cpuid(HV_CPUID_VENDOR, 0, r);
  if (r[0] < HV_CPUID_FEATURES) guest_done(); /* KVM's leaves: no Hyper-V */

  cpuid(HV_CPUID_FEATURES, 0, r);
  kv_dec("synic_available", (r[0] & HV_FEATURE_SYNIC) != 0);
  kv_dec("ref_count_available", (r[0] & HV_FEATURE_TIME_REF_COUNT) != 0);
  if (!(r[0] & HV_FEATURE_TIME_REF_COUNT) || !(r[0] & HV_FEATURE_SYNIC))
    guest_fail("Hyper-V leaves without SynIC or the reference counter");

  uint64_t t0 = rdmsr(HV_MSR_TIME_REF_COUNT);
  uint64_t t1 = rdmsr(HV_MSR_TIME_REF_COUNT);
  kv_dec("ref_count_monotonic", t1 >= t0);

  uint32_t writes = 0;
  wrmsr(HV_MSR_SIMP, (uint32_t)synic_pages[0] | HV_SYNIC_ENABLE);
  ++writes;
  wrmsr(HV_MSR_SIEFP, (uint32_t)synic_pages[1] | HV_SYNIC_ENABLE);
  ++writes;
  wrmsr(HV_MSR_SCONTROL, HV_SYNIC_ENABLE);
  ++writes;
  kv_dec("synic_control_writes", writes);
  kv_hex("scontrol", rdmsr(HV_MSR_SCONTROL));
  guest_done();
}
