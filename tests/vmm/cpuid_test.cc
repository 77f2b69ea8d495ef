// One vCPU's CPUID from KVM's supported entries (vmm/kvm/cpuid.h): its own
// APIC ID, and no APIC bits without a local APIC in the kernel.
#include "vmm/kvm/cpuid.h"

#include <vector>

#include "gtest/gtest.h"

namespace minivmm {
namespace {

kvm_cpuid_entry2 Entry(uint32_t function, uint32_t index, uint32_t value) {
  kvm_cpuid_entry2 e{};
  e.function = function;
  e.index = index;
  e.eax = e.ebx = e.ecx = e.edx = value;
  return e;
}

// What KVM_GET_SUPPORTED_CPUID might give: every bit set, so that each one
// the machine takes away shows.
std::vector<kvm_cpuid_entry2> Supported() {
  return {Entry(0, 0, 0x1f), Entry(1, 0, 0xffffffff), Entry(7, 0, 0xffffffff),
          Entry(0xb, 0, 0x11111111), Entry(0xb, 1, 0x22222222), Entry(0x1f, 0, 0x33333333),
          Entry(0x40000001, 0, 0xffffffff)};
}

TEST(CpuidTest, WithoutALocalApicEachVcpuHasItsIdAndNoApicBits) {
  std::vector<kvm_cpuid_entry2> entries = Supported();
  AdjustCpuid(entries, CpuidMachine{.apic_id = 5});
  const kvm_cpuid_entry2& leaf1 = entries[1];
  EXPECT_EQ(leaf1.ebx >> kCpuidApicIdShift, 5u);
  EXPECT_EQ(leaf1.ebx & 0x00ffffffu, 0x00ffffffu);  // the rest of EBX is KVM's
  EXPECT_EQ(leaf1.ecx & kCpuidEcxX2apic, 0u);
  EXPECT_EQ(leaf1.ecx & kCpuidEcxTscDeadline, 0u);
  EXPECT_NE(leaf1.ecx & kCpuidEcxHypervisor, 0u);
  EXPECT_EQ(leaf1.ecx | kCpuidEcxX2apic | kCpuidEcxTscDeadline, 0xffffffffu);
  EXPECT_EQ(leaf1.edx, 0xffffffffu & ~kCpuidEdxApic);
  EXPECT_EQ(leaf1.eax, 0xffffffffu);
  for (size_t i : {3, 4, 5}) {
    EXPECT_EQ(entries[i].edx, 5u) << "leaf " << entries[i].function << "." << entries[i].index;
    EXPECT_EQ(entries[i].eax, Supported()[i].eax);
    EXPECT_EQ(entries[i].ebx, Supported()[i].ebx);
    EXPECT_EQ(entries[i].ecx, Supported()[i].ecx);
  }
  for (size_t i : {0, 2, 6}) {
    EXPECT_EQ(entries[i].eax, Supported()[i].eax);
    EXPECT_EQ(entries[i].ebx, Supported()[i].ebx);
    EXPECT_EQ(entries[i].ecx, Supported()[i].ecx);
    EXPECT_EQ(entries[i].edx, Supported()[i].edx);
  }
}

TEST(CpuidTest, WithALocalApicInTheKernelTheApicBitsAreKvms) {
  std::vector<kvm_cpuid_entry2> entries = Supported();
  AdjustCpuid(entries, CpuidMachine{
                           .apic_id = 0, .local_apic_in_kernel = true, .tsc_deadline_timer = true});
  EXPECT_EQ(entries[1].ecx, 0xffffffffu);
  EXPECT_EQ(entries[1].edx, 0xffffffffu);
  EXPECT_EQ(entries[1].ebx, 0x00ffffffu);
  // And the hypervisor bit is set where KVM left it clear.
  entries = Supported();
  entries[1].ecx = 0;
  AdjustCpuid(entries, CpuidMachine{.apic_id = 0, .local_apic_in_kernel = true});
  EXPECT_EQ(entries[1].ecx, kCpuidEcxHypervisor);
}

// KVM never reports the TSC-deadline timer among its supported bits: it is
// set where the machine says KVM has it, and cleared where it does not.
TEST(CpuidTest, TheTscDeadlineBitFollowsTheMachineNotKvmsList) {
  std::vector<kvm_cpuid_entry2> entries = Supported();
  entries[1].ecx = 0;
  AdjustCpuid(entries, CpuidMachine{
                           .apic_id = 0, .local_apic_in_kernel = true, .tsc_deadline_timer = true});
  EXPECT_EQ(entries[1].ecx, kCpuidEcxHypervisor | kCpuidEcxTscDeadline);
  entries = Supported();
  AdjustCpuid(entries, CpuidMachine{.apic_id = 0, .local_apic_in_kernel = true});
  EXPECT_EQ(entries[1].ecx, 0xffffffffu & ~kCpuidEcxTscDeadline);
}

// The initial APIC ID is 8 bits; the x2APIC ID is the whole number.
TEST(CpuidTest, TheInitialApicIdIsTheLowByteAndTheX2apicIdTheWholeNumber) {
  std::vector<kvm_cpuid_entry2> entries = Supported();
  AdjustCpuid(entries, CpuidMachine{.apic_id = 0x123});
  EXPECT_EQ(entries[1].ebx >> kCpuidApicIdShift, 0x23u);
  EXPECT_EQ(entries[3].edx, 0x123u);
}

TEST(CpuidTest, HypervLeavesComeFirstAndKvmsMoveUpBy0x100) {
  std::vector<kvm_cpuid_entry2> entries = Supported();
  entries.push_back(Entry(0x40000000, 0, 0x40000001));  // KVM's signature leaf: its maximum
  const std::vector<kvm_cpuid_entry2> hv = {Entry(0x40000000, 0, 0x4000000a),
                                            Entry(0x40000003, 0, 0x7fff)};
  AddHypervLeaves(entries, hv);
  auto find = [&entries](uint32_t leaf) -> const kvm_cpuid_entry2* {
    const kvm_cpuid_entry2* found = nullptr;
    for (const kvm_cpuid_entry2& e : entries)
      if (e.function == leaf) {
        EXPECT_EQ(found, nullptr) << "leaf " << std::hex << leaf << " twice";
        found = &e;
      }
    return found;
  };
  ASSERT_NE(find(0x40000000), nullptr);
  EXPECT_EQ(find(0x40000000)->eax, 0x4000000au);
  ASSERT_NE(find(0x40000003), nullptr);
  EXPECT_EQ(find(0x40000003)->eax, 0x7fffu);
  ASSERT_NE(find(0x40000100), nullptr);
  EXPECT_EQ(find(0x40000100)->eax, 0x40000101u);
  ASSERT_NE(find(0x40000101), nullptr);
  EXPECT_EQ(find(0x40000101)->eax, 0xffffffffu);
  EXPECT_EQ(find(0x40000001), nullptr);
  EXPECT_EQ(entries.size(), Supported().size() + 1 + hv.size());
  ASSERT_NE(find(1), nullptr);
  EXPECT_EQ(find(1)->eax, 0xffffffffu);  // the rest untouched
}

}  // namespace
}  // namespace minivmm
