#include "devices/uart16550.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tests/common/fake_vm.h"

namespace minivmm {
namespace {

constexpr uint64_t kThr = 0, kIer = 1, kIir = 2, kLcr = 3, kMcr = 4, kLsr = 5, kMsr = 6, kScr = 7;
constexpr uint64_t kDll = 0, kDlm = 1;

class Uart16550Test : public ::testing::Test {
 protected:
  void Out(uint64_t offset, uint8_t value) {
    const uint8_t data[1] = {value};
    uart_.Write(offset, data, vm_.exit);
  }
  uint8_t In(uint64_t offset) {
    uint8_t data[1] = {0xEE};
    uart_.Read(offset, data, vm_.exit);
    return data[0];
  }
  void Print(std::string_view s) {
    for (char c : s) Out(kThr, static_cast<uint8_t>(c));
  }

  testing::FakeVm vm_;
  Uart16550 uart_{&vm_.console};
};

TEST_F(Uart16550Test, NameIsUart) { EXPECT_EQ(uart_.Name(), "uart"); }

TEST_F(Uart16550Test, ThrWritesReachConsoleInOrder) {
  Print("hello\n");
  EXPECT_EQ(vm_.console.out, "hello\n");
}

TEST_F(Uart16550Test, TransmittedBytesAreCounted) {
  Print("abc");
  EXPECT_EQ(uart_.bytes_transmitted(), 3u);
}

TEST_F(Uart16550Test, NullConsoleCountsAndDrops) {
  Uart16550 uart(nullptr);
  const uint8_t data[1] = {'x'};
  uart.Write(kThr, data, vm_.exit);
  EXPECT_EQ(uart.bytes_transmitted(), 1u);
}

TEST_F(Uart16550Test, LsrReportsTransmitterEmpty) {
  EXPECT_EQ(In(kLsr), 0x60);
  Print("x");
  EXPECT_EQ(In(kLsr), 0x60);
}

TEST_F(Uart16550Test, IirReportsNoInterrupt) { EXPECT_EQ(In(kIir), 0x01); }

TEST_F(Uart16550Test, IirReportsFifosOnceEnabled) {
  Out(kIir, 0x07);  // FCR: enable and clear FIFOs
  EXPECT_EQ(In(kIir), 0xC1);
  Out(kIir, 0x00);
  EXPECT_EQ(In(kIir), 0x01);
}

TEST_F(Uart16550Test, RbrReadsZero) { EXPECT_EQ(In(kThr), 0x00); }

TEST_F(Uart16550Test, DlabRoutesOffsetsZeroAndOneToDivisor) {
  Out(kLcr, 0x83);
  Out(kDll, 0x01);
  Out(kDlm, 0x02);
  EXPECT_EQ(In(kDll), 0x01);
  EXPECT_EQ(In(kDlm), 0x02);
  EXPECT_EQ(vm_.console.out, "");  // the DLL write was not transmitted
  EXPECT_EQ(uart_.bytes_transmitted(), 0u);
}

TEST_F(Uart16550Test, ClearingDlabRestoresThrAndIer) {
  Out(kLcr, 0x80);
  Out(kDlm, 0x05);
  Out(kLcr, 0x03);
  EXPECT_EQ(In(kIer), 0x00);  // IER untouched by the DLM write
  Print("k");
  EXPECT_EQ(vm_.console.out, "k");
  Out(kLcr, 0x80);
  EXPECT_EQ(In(kDlm), 0x05);  // the divisor survived
}

TEST_F(Uart16550Test, IerKeepsLowFourBits) {
  Out(kIer, 0xFF);
  EXPECT_EQ(In(kIer), 0x0F);
}

TEST_F(Uart16550Test, LcrMcrScrReadBack) {
  Out(kLcr, 0x1B);
  Out(kMcr, 0x0B);
  Out(kScr, 0xA5);
  EXPECT_EQ(In(kLcr), 0x1B);
  EXPECT_EQ(In(kMcr), 0x0B);
  EXPECT_EQ(In(kScr), 0xA5);
}

TEST_F(Uart16550Test, LsrAndMsrIgnoreWrites) {
  Out(kLsr, 0x00);
  Out(kMsr, 0x00);
  EXPECT_EQ(In(kLsr), 0x60);
  EXPECT_EQ(In(kMsr), 0xB0);
}

TEST_F(Uart16550Test, MsrReportsCarrierDsrCts) { EXPECT_EQ(In(kMsr), 0xB0); }

// Linux's 8250 autoconfig writes MCR = LOOP | OUT2 | RTS and expects MSR
// 0x90 (DCD | CTS) back before it believes there is a UART.
TEST_F(Uart16550Test, LoopbackReflectsMcrInMsr) {
  Out(kMcr, 0x1A);
  EXPECT_EQ(In(kMsr) & 0xF0, 0x90);
  Out(kMcr, 0x15);  // LOOP | OUT1 | DTR
  EXPECT_EQ(In(kMsr) & 0xF0, 0x60);
}

TEST_F(Uart16550Test, LoopbackRoutesThrToRbr) {
  Out(kMcr, 0x10);
  Print("z");
  EXPECT_EQ(vm_.console.out, "");
  EXPECT_EQ(uart_.bytes_transmitted(), 0u);
  EXPECT_EQ(In(kLsr), 0x61);  // data ready
  EXPECT_EQ(In(kThr), 'z');
  EXPECT_EQ(In(kLsr), 0x60);  // reading RBR consumed it
}

TEST_F(Uart16550Test, WideWriteIsSplitIntoConsecutiveRegisters) {
  const uint8_t data[2] = {'w', 0x03};  // THR, then IER
  uart_.Write(kThr, data, vm_.exit);
  EXPECT_EQ(vm_.console.out, "w");
  EXPECT_EQ(In(kIer), 0x03);
}

TEST_F(Uart16550Test, WideReadIsSplitIntoConsecutiveRegisters) {
  uint8_t data[2] = {};
  uart_.Read(kLsr, data, vm_.exit);  // LSR, then MSR
  EXPECT_EQ(data[0], 0x60);
  EXPECT_EQ(data[1], 0xB0);
}

TEST_F(Uart16550Test, ReadPastRegistersIsAllOnes) { EXPECT_EQ(In(8), 0xFF); }

TEST_F(Uart16550Test, DeviceNeverRequestsAnything) {
  Print("line\n");
  EXPECT_EQ(vm_.control.request, VcpuRequest::kNone);
}

}  // namespace
}  // namespace minivmm
