#include <gtest/gtest.h>

#include "tests/hypercalls/expect.h"

namespace minivmm {
namespace {

using testing::CheckedVm;
using testing::kRamSize;

class ConsoleIoTest : public ::testing::Test {
 protected:
  CheckedVm vm_;
};

TEST_F(ConsoleIoTest, WritesBytesAndReturnsCount) {
  vm_.PokeBytes(0x4000, "hello\n");
  const HypercallResult result = vm_.Result(MVMM_HC_console_io, MVMM_CONSOLEIO_WRITE, 6, 0x4000);
  EXPECT_EQ(testing::AbiRow(result.value, "console_io.ok"), 6);
  EXPECT_EQ(result.refusal, nullptr);
  EXPECT_EQ(vm_.console.out, "hello\n");
  EXPECT_EQ(vm_.console.writes, 1u);
}

TEST_F(ConsoleIoTest, ZeroBytesWritesNothing) {
  EXPECT_EQ(vm_.Call(MVMM_HC_console_io, MVMM_CONSOLEIO_WRITE, 0, kRamSize), 0);
  EXPECT_EQ(vm_.console.writes, 0u);
}

TEST_F(ConsoleIoTest, MaximumLengthIsAccepted) {
  EXPECT_EQ(vm_.Call(MVMM_HC_console_io, 0, MVMM_CONSOLEIO_MAX_BYTES, 0x4000),
            MVMM_CONSOLEIO_MAX_BYTES);
  EXPECT_EQ(vm_.console.out.size(), MVMM_CONSOLEIO_MAX_BYTES);
}

TEST_F(ConsoleIoTest, OverMaximumIsE2big) {
  const HypercallResult result =
      vm_.Result(MVMM_HC_console_io, 0, MVMM_CONSOLEIO_MAX_BYTES + 1, 0x4000);
  EXPECT_EQ(testing::AbiRow(result.value, "console_io.E2BIG"), -MVMM_E2BIG);
  EXPECT_STREQ(result.refusal, "count above MVMM_CONSOLEIO_MAX_BYTES");
  EXPECT_EQ(vm_.Call(MVMM_HC_console_io, 0, ~0ull, 0x4000), -MVMM_E2BIG);
  EXPECT_EQ(vm_.console.writes, 0u);
}

TEST_F(ConsoleIoTest, UnknownCommandIsEinval) {
  const HypercallResult result = vm_.Result(MVMM_HC_console_io, 1, 4, 0x4000);
  EXPECT_EQ(testing::AbiRow(result.value, "console_io.EINVAL"), -MVMM_EINVAL);
  EXPECT_STREQ(result.refusal, "unknown cmd");
  EXPECT_EQ(vm_.Call(MVMM_HC_console_io, ~0ull, 4, 0x4000), -MVMM_EINVAL);
  EXPECT_EQ(vm_.console.writes, 0u);
}

TEST_F(ConsoleIoTest, BufferOutsideRamIsEfault) {
  const HypercallResult result = vm_.Result(MVMM_HC_console_io, 0, 1, kRamSize);
  EXPECT_EQ(testing::AbiRow(result.value, "console_io.EFAULT"), -MVMM_EFAULT);
  EXPECT_STREQ(result.refusal, "buffer outside RAM");
  EXPECT_EQ(vm_.Call(MVMM_HC_console_io, 0, 16, kRamSize - 15), -MVMM_EFAULT);  // crosses end
  EXPECT_EQ(vm_.Call(MVMM_HC_console_io, 0, 16, ~0ull - 7), -MVMM_EFAULT);      // wraps
  EXPECT_EQ(vm_.console.writes, 0u);
}

TEST_F(ConsoleIoTest, BufferEndingAtEndOfRamIsAccepted) {
  EXPECT_EQ(vm_.Call(MVMM_HC_console_io, 0, 16, kRamSize - 16), 16);
}

TEST_F(ConsoleIoTest, ChecksInDocumentedOrder) {
  EXPECT_EQ(vm_.Call(MVMM_HC_console_io, 1, ~0ull, ~0ull), -MVMM_EINVAL);
  EXPECT_EQ(vm_.Call(MVMM_HC_console_io, 0, ~0ull, ~0ull), -MVMM_E2BIG);
}

TEST_F(ConsoleIoTest, NoConsoleStillSucceeds) {
  vm_.env.console = nullptr;
  EXPECT_EQ(vm_.Call(MVMM_HC_console_io, 0, 3, 0x4000), 3);
}

}  // namespace
}  // namespace minivmm
