#include "hypercalls/mmuext_policy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>

#include "minivmm_abi/boot.h"

namespace minivmm {
namespace {

constexpr uint64_t kRam = 8ull << 20;
constexpr uint64_t kLastFrame = kRam / 4096 - 1;

mvmm_mmuext_op BasePtr(uint64_t frame) { return {MVMM_MMUEXT_NEW_BASEPTR, 0, frame, 0}; }

TEST(MmuextPolicyTest, AcceptsFramesFromTheBootPageTablesToTheEndOfRam) {
  for (uint64_t frame :
       std::initializer_list<uint64_t>{MVMM_PAGE_TABLES_GPA / 4096, 0x100, kLastFrame}) {
    const HypercallResult result = CheckMmuextOp(BasePtr(frame), kRam);
    EXPECT_EQ(result.value, 0) << frame;
    EXPECT_EQ(result.refusal, nullptr) << frame;
  }
  EXPECT_EQ(BasePtrCr3(BasePtr(0x123)), 0x123000u);
}

TEST(MmuextPolicyTest, EveryOtherCommandIsEinval) {
  // Xen's other commands (pin/unpin 0-4, 6-18) and anything else.
  for (uint32_t cmd : {0u, 1u, 4u, 6u, 7u, 18u, 0xffffffffu}) {
    mvmm_mmuext_op op = BasePtr(0x100);
    op.cmd = cmd;
    const HypercallResult result = CheckMmuextOp(op, kRam);
    EXPECT_EQ(result.value, -MVMM_EINVAL) << cmd;
    EXPECT_STREQ(result.refusal, "unknown mmuext_op command");
  }
}

TEST(MmuextPolicyTest, ReservedOrArg2NotZeroIsEinval) {
  mvmm_mmuext_op op = BasePtr(0x100);
  op.reserved = 1;
  EXPECT_EQ(CheckMmuextOp(op, kRam).value, -MVMM_EINVAL);
  op = BasePtr(0x100);
  op.arg2 = 1ull << 63;
  const HypercallResult result = CheckMmuextOp(op, kRam);
  EXPECT_EQ(result.value, -MVMM_EINVAL);
  EXPECT_STREQ(result.refusal, "NEW_BASEPTR with reserved or arg2 not 0");
}

TEST(MmuextPolicyTest, FrameOutsideRamIsEfault) {
  // The first frame past RAM, the GDT page, frames whose address overflows.
  for (uint64_t frame : std::initializer_list<uint64_t>{kLastFrame + 1, MVMM_GDT_GPA / 4096,
                                                        1ull << 52, ~0ull >> 12, ~0ull}) {
    const HypercallResult result = CheckMmuextOp(BasePtr(frame), kRam);
    EXPECT_EQ(result.value, -MVMM_EFAULT) << frame;
    EXPECT_STREQ(result.refusal, "NEW_BASEPTR frame outside RAM");
  }
  EXPECT_EQ(CheckMmuextOp(BasePtr(0x100), 0).value, -MVMM_EFAULT);  // no RAM at all
}

TEST(MmuextPolicyTest, TheVmmsBootPagesAreEperm) {
  // Page 0, boot_info, the command line, the TSS and the rest below the
  // boot page tables.
  for (uint64_t frame :
       std::initializer_list<uint64_t>{0, MVMM_BOOT_INFO_GPA / 4096, MVMM_CMDLINE_GPA / 4096,
                                       MVMM_TSS_GPA / 4096, MVMM_PAGE_TABLES_GPA / 4096 - 1}) {
    const HypercallResult result = CheckMmuextOp(BasePtr(frame), kRam);
    EXPECT_EQ(result.value, -MVMM_EPERM) << frame;
    EXPECT_STREQ(result.refusal, "NEW_BASEPTR frame in the VMM's boot pages");
  }
}

TEST(MmuextPolicyTest, CommandIsCheckedFirstThenArgumentsThenFrame) {
  EXPECT_EQ(CheckMmuextOp({7, 1, ~0ull, 1}, kRam).value, -MVMM_EINVAL);
  EXPECT_EQ(CheckMmuextOp({MVMM_MMUEXT_NEW_BASEPTR, 0, ~0ull, 1}, kRam).value, -MVMM_EINVAL);
  EXPECT_EQ(CheckMmuextOp({MVMM_MMUEXT_NEW_BASEPTR, 0, kRam, 0}, kRam / 2).value, -MVMM_EFAULT);
}

}  // namespace
}  // namespace minivmm
