#include "devices/debug_exit.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tests/common/fake_vm.h"

namespace minivmm {
namespace {

class DebugExitTest : public ::testing::Test {
 protected:
  void Out(uint64_t offset, std::vector<uint8_t> bytes) { dev_.Write(offset, bytes, vm_.exit); }

  testing::FakeVm vm_;
  DebugExit dev_;
};

TEST_F(DebugExitTest, NameIsDebugExit) { EXPECT_EQ(dev_.Name(), "debug-exit"); }

TEST_F(DebugExitTest, ByteWriteRequestsShutdownWithShiftedStatus) {
  Out(0, {0x10});
  EXPECT_EQ(vm_.control.request, VcpuRequest::kShutdown);
  EXPECT_EQ(vm_.control.exit_code, 0x21);
}

TEST_F(DebugExitTest, ZeroWriteExitsWithOne) {
  Out(0, {0x00});
  EXPECT_EQ(vm_.control.exit_code, 1);
}

TEST_F(DebugExitTest, WordWriteIsLittleEndian) {
  Out(0, {0x21, 0x00});
  EXPECT_EQ(vm_.control.exit_code, 0x43);
}

TEST_F(DebugExitTest, DwordWriteTakesTheWholeValue) {
  Out(0, {0x7F, 0x00, 0x00, 0x00});
  EXPECT_EQ(vm_.control.exit_code, 0xFF);
}

TEST_F(DebugExitTest, StatusKeepsLowEightBitsLikeQemu) {
  Out(0, {0x80, 0x01, 0x00, 0x00});  // (0x180 << 1) | 1 = 0x301
  EXPECT_EQ(vm_.control.exit_code, 0x01);
  EXPECT_EQ(DebugExit::StatusFor(0xFFFFFFFF), 0xFF);
}

TEST_F(DebugExitTest, WriteAtAnyOffsetInRangeExits) {
  Out(3, {0x02});
  EXPECT_EQ(vm_.control.request, VcpuRequest::kShutdown);
  EXPECT_EQ(vm_.control.exit_code, 0x05);
}

TEST_F(DebugExitTest, OddSizedWriteIsIgnoredAndCounted) {
  Out(0, {0x01, 0x02, 0x03});
  EXPECT_EQ(vm_.control.request, VcpuRequest::kNone);
  EXPECT_EQ(dev_.ignored_writes(), 1u);
}

TEST_F(DebugExitTest, QwordWriteIsIgnored) {
  Out(0, std::vector<uint8_t>(8, 0x01));
  EXPECT_EQ(vm_.control.request, VcpuRequest::kNone);
}

TEST_F(DebugExitTest, ReadReturnsZero) {
  std::vector<uint8_t> data(4, 0xEE);
  dev_.Read(0, data, vm_.exit);
  EXPECT_EQ(data, std::vector<uint8_t>(4, 0x00));
  EXPECT_EQ(vm_.control.request, VcpuRequest::kNone);
}

}  // namespace
}  // namespace minivmm
