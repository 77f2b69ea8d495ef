#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/common/descriptors.h"
#include "tests/hypercalls/expect.h"

namespace minivmm {
namespace {

using testing::CheckedVm;
using testing::kUserTlsDesc;
using testing::TlsSlotGpa;

class UpdateDescriptorTest : public ::testing::Test {
 protected:
  int64_t Update(uint64_t gpa, uint64_t desc) {
    return vm_.Call(MVMM_HC_update_descriptor, gpa, desc);
  }
  const char* Refusal(uint64_t gpa, uint64_t desc) {
    return vm_.Result(MVMM_HC_update_descriptor, gpa, desc).refusal;
  }
  bool GdtUntouched() const { return vm_.gdt == std::vector<uint8_t>(4096, 0); }
  CheckedVm vm_;
};

TEST_F(UpdateDescriptorTest, WritesEachTlsSlotWithAccessedBit) {
  EXPECT_EQ(Refusal(TlsSlotGpa(0), kUserTlsDesc), nullptr);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(testing::AbiRow(Update(TlsSlotGpa(i), kUserTlsDesc), "update_descriptor.ok"), 0);
    EXPECT_EQ(vm_.GdtSlot(7 + i), kUserTlsDesc | MVMM_DESC_ACCESSED);
  }
}

TEST_F(UpdateDescriptorTest, ZeroDescriptorClearsSlot) {
  ASSERT_EQ(Update(TlsSlotGpa(1), kUserTlsDesc), 0);
  EXPECT_EQ(Update(TlsSlotGpa(1), 0), 0);
  EXPECT_EQ(vm_.GdtSlot(8), 0u);
}

TEST_F(UpdateDescriptorTest, MisalignedAddressIsEinval) {
  for (uint64_t off = 1; off < 8; ++off) {
    EXPECT_EQ(
        testing::AbiRow(Update(TlsSlotGpa(0) + off, kUserTlsDesc), "update_descriptor.EINVAL"),
        -MVMM_EINVAL)
        << off;
  }
  EXPECT_EQ(Update(MVMM_GDT_GPA - 3, kUserTlsDesc), -MVMM_EINVAL);  // before range check
  EXPECT_STREQ(Refusal(MVMM_GDT_GPA - 3, kUserTlsDesc), "gpa misaligned");
  EXPECT_TRUE(GdtUntouched());
}

TEST_F(UpdateDescriptorTest, AddressOutsideGdtPageIsEfault) {
  EXPECT_EQ(testing::AbiRow(Update(MVMM_GDT_GPA - 8, kUserTlsDesc), "update_descriptor.EFAULT"),
            -MVMM_EFAULT);
  EXPECT_EQ(Update(MVMM_GDT_GPA + 4096, kUserTlsDesc), -MVMM_EFAULT);
  EXPECT_EQ(Update(0x1000 + 56, kUserTlsDesc), -MVMM_EFAULT);  // RAM, not the GDT
  EXPECT_EQ(Update(~7ull, kUserTlsDesc), -MVMM_EFAULT);
  EXPECT_STREQ(Refusal(MVMM_GDT_GPA - 8, kUserTlsDesc), "gpa below the GDT");
  EXPECT_STREQ(Refusal(MVMM_GDT_GPA + 4096, kUserTlsDesc), "gpa outside the GDT");
  EXPECT_TRUE(GdtUntouched());
}

TEST_F(UpdateDescriptorTest, ReservedSlotIsEperm) {
  for (uint64_t slot : {0, 1, 2, 3, 4, 5, 6, 10, 11, 511}) {
    EXPECT_EQ(
        testing::AbiRow(Update(MVMM_GDT_GPA + 8 * slot, kUserTlsDesc), "update_descriptor.EPERM"),
        -MVMM_EPERM)
        << slot;
  }
  EXPECT_STREQ(Refusal(MVMM_GDT_GPA + 8, kUserTlsDesc), "slot is not a TLS slot");
  EXPECT_TRUE(GdtUntouched());
}

// Any vCPU may write any vCPU's TLS slots, the VM's own vCPUs' only: the
// GDT of a vCPU the VM lacks is as reserved as entries 0-6.
TEST_F(UpdateDescriptorTest, EachVcpusTlsSlotsAreWritableAndNoOthers) {
  vm_.cpus.cpus = 3;
  vm_.exit.vcpu_id = 1;
  for (uint32_t cpu = 0; cpu < MVMM_MAX_CPUS; ++cpu) {
    for (int i = 0; i < 3; ++i) {
      SCOPED_TRACE(::testing::Message() << "cpu " << cpu << " slot " << i);
      const int64_t want = cpu < 3 ? 0 : -MVMM_EPERM;
      EXPECT_EQ(Update(TlsSlotGpa(i, cpu), kUserTlsDesc), want);
      uint64_t stored;
      std::memcpy(&stored, vm_.gdt.data() + (TlsSlotGpa(i, cpu) - MVMM_GDT_GPA), 8);
      EXPECT_EQ(stored, cpu < 3 ? kUserTlsDesc | MVMM_DESC_ACCESSED : 0);
    }
  }
  EXPECT_STREQ(Refusal(TlsSlotGpa(0, 3), kUserTlsDesc), "slot is not a TLS slot");
  for (int i = 0; i < 3; ++i) {
    for (uint32_t cpu = 0; cpu < 3; ++cpu) ASSERT_EQ(Update(TlsSlotGpa(i, cpu), 0), 0);
  }
  EXPECT_TRUE(GdtUntouched());
}

// With one vCPU (and with no vCPU directory at all) only entries 7-9 of the
// page take a store.
TEST_F(UpdateDescriptorTest, OneVcpuAcceptsOnlyEntriesSevenToNine) {
  for (bool directory : {true, false}) {
    if (!directory) vm_.env.cpus = nullptr;
    for (uint64_t entry = 0; entry < 512; ++entry) {
      const bool tls = entry >= 7 && entry <= 9;
      EXPECT_EQ(Update(MVMM_GDT_GPA + 8 * entry, 0), tls ? 0 : -MVMM_EPERM) << entry;
    }
  }
  EXPECT_TRUE(GdtUntouched());
}

TEST_F(UpdateDescriptorTest, ReservedSlotIsCheckedBeforeDescriptor) {
  EXPECT_EQ(Update(MVMM_GDT_GPA + 8, 0x00AF9B000000FFFFull), -MVMM_EPERM);
}

TEST_F(UpdateDescriptorTest, RefusedDescriptorIsEinval) {
  const uint64_t refused[] = {
      0x00CF93000000FFFFull,  // DPL 0 data
      0x00CFB3000000FFFFull,  // DPL 1 data
      0x00AFFB000000FFFFull,  // DPL 3 code
      0x00008B0030000067ull,  // busy TSS
      0x00CF72000000FFFFull,  // not present, non-zero
      0x00EFF3000000FFFFull,  // L bit on data
      0x0000EC0000080000ull,  // call gate, DPL 3
  };
  for (uint64_t desc : refused) {
    EXPECT_EQ(testing::AbiRow(Update(TlsSlotGpa(2), desc), "update_descriptor.EINVAL.2"),
              -MVMM_EINVAL)
        << std::hex << desc;
  }
  EXPECT_STREQ(Refusal(TlsSlotGpa(2), refused[0]), "DPL is not 3");
  EXPECT_STREQ(Refusal(TlsSlotGpa(2), refused[2]), "code segment");
  EXPECT_STREQ(Refusal(TlsSlotGpa(2), refused[3]), "system segment");
  EXPECT_STREQ(Refusal(TlsSlotGpa(2), refused[4]), "not present");
  EXPECT_STREQ(Refusal(TlsSlotGpa(2), refused[5]), "L bit set on a data segment");
  EXPECT_TRUE(GdtUntouched());
}

TEST_F(UpdateDescriptorTest, NoGdtPageIsEfault) {
  vm_.env.gdt = {};
  EXPECT_EQ(Update(TlsSlotGpa(0), kUserTlsDesc), -MVMM_EFAULT);
}

TEST_F(UpdateDescriptorTest, CountsDescriptorUpdateCause) {
  Update(TlsSlotGpa(0), kUserTlsDesc);
  Update(MVMM_GDT_GPA, kUserTlsDesc);  // refused: exit, no op
  EXPECT_EQ(vm_.cause(Cause::kDescriptorUpdate).ops, 1u);
  EXPECT_EQ(vm_.cause(Cause::kDescriptorUpdate).exits, 2u);
  EXPECT_EQ(vm_.stats.hc_errors[MVMM_HC_update_descriptor], 1u);
}

}  // namespace
}  // namespace minivmm
