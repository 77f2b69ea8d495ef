#include "devices/ioapic.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tests/common/device_access.h"
#include "tests/common/fake_vm.h"
#include "tests/common/recording_interrupts.h"

namespace minivmm {
namespace {

using IoapicSentMsi = testing::RecordingMsiSink::Sent;

constexpr uint32_t kIoapicRedLow = 0x10;            // IOREGSEL of entry 0's low dword
constexpr uint32_t kIoapicEdgeFixed = 0x00000040;   // vector 0x40, fixed, physical, edge
constexpr uint32_t kIoapicLevelFixed = 0x00008050;  // vector 0x50, fixed, physical, level

class IoapicTest : public ::testing::Test {
 protected:
  uint64_t Load(uint64_t offset, size_t size = 4) {
    return testing::ReadLe(ioapic_, offset, size, vm_.exit);
  }
  void Store(uint64_t offset, uint64_t value, size_t size = 4) {
    testing::WriteLe(ioapic_, offset, size, value, vm_.exit);
  }
  uint32_t ReadReg(uint32_t index) {
    Store(Ioapic::kRegSel, index);
    return static_cast<uint32_t>(Load(Ioapic::kWindow));
  }
  void WriteReg(uint32_t index, uint32_t value) {
    Store(Ioapic::kRegSel, index);
    Store(Ioapic::kWindow, value);
  }
  void Program(uint32_t pin, uint32_t low, uint32_t high = 0) {
    WriteReg(kIoapicRedLow + 2 * pin + 1, high);
    WriteReg(kIoapicRedLow + 2 * pin, low);
  }
  static IoapicSentMsi Msi(uint32_t address, uint32_t data) {
    return {{address, data}, std::nullopt};
  }

  testing::FakeVm vm_;
  testing::RecordingMsiSink sink_;
  Ioapic ioapic_{&sink_, 5};
};

TEST_F(IoapicTest, NameAndAddresses) {
  EXPECT_EQ(ioapic_.Name(), "ioapic");
  EXPECT_EQ(Ioapic::kMmioBase, 0xFEC00000u);
  EXPECT_EQ(Ioapic::kIoSize, 0x1000u);
  EXPECT_EQ(Ioapic::kPins, 24u);
}

TEST_F(IoapicTest, ResetState) {
  EXPECT_EQ(ReadReg(0x00), 5u << 24);
  EXPECT_EQ(ReadReg(0x01), 0x00170020u);
  EXPECT_EQ(ReadReg(0x02), 5u << 24);
  for (uint32_t pin = 0; pin < Ioapic::kPins; ++pin) {
    EXPECT_EQ(ReadReg(kIoapicRedLow + 2 * pin), 0x10000u) << pin;
    EXPECT_EQ(ReadReg(kIoapicRedLow + 2 * pin + 1), 0u) << pin;
    EXPECT_TRUE(ioapic_.IsMasked(pin));
    EXPECT_FALSE(ioapic_.IsLevel(pin));
  }
  EXPECT_EQ(ioapic_.irr(), 0u);
  EXPECT_EQ(ioapic_.counters().ignored_accesses, 0u);
  EXPECT_EQ(ioapic_.counters().ignored_register_accesses, 0u);
}

TEST_F(IoapicTest, IdKeepsBits27To24) {
  WriteReg(0x00, 0xffffffff);
  EXPECT_EQ(ReadReg(0x00), 0x0f000000u);
  EXPECT_EQ(ReadReg(0x02), 0x0f000000u);
  EXPECT_EQ(ioapic_.id(), 0xf);
  ioapic_.Reset();
  EXPECT_EQ(ioapic_.id(), 5);  // the constructor's
}

TEST_F(IoapicTest, VersionAndArbitrationAreReadOnly) {
  WriteReg(0x01, 0);
  WriteReg(0x02, 0x0a000000);
  EXPECT_EQ(ReadReg(0x01), 0x00170020u);
  EXPECT_EQ(ReadReg(0x02), 5u << 24);
  EXPECT_EQ(ioapic_.counters().ignored_register_accesses, 2u);
}

TEST_F(IoapicTest, RegisterSelectKeepsEightBitsAtAnySize) {
  Store(Ioapic::kRegSel, 0x12345611);
  EXPECT_EQ(Load(Ioapic::kRegSel), 0x11u);
  EXPECT_EQ(ioapic_.register_select(), 0x11);
  Store(Ioapic::kRegSel, 0x22, 1);
  EXPECT_EQ(Load(Ioapic::kRegSel, 1), 0x22u);
  Store(Ioapic::kRegSel, 0x3333, 2);
  EXPECT_EQ(Load(Ioapic::kRegSel, 2), 0x33u);
  EXPECT_EQ(ioapic_.counters().ignored_accesses, 0u);
}

TEST_F(IoapicTest, EntryHalvesReadBackSeparately) {
  WriteReg(0x10 + 2 * 7,
           0x0001a9ab);  // masked level active-low logical lowest-priority, vector 0xab
  WriteReg(0x11 + 2 * 7, 0xff000000);
  EXPECT_EQ(ReadReg(0x10 + 2 * 7), 0x0001a9abu);
  EXPECT_EQ(ReadReg(0x11 + 2 * 7), 0xff000000u);
  EXPECT_EQ(ioapic_.Entry(7), 0xff0000000001a9abu);
  WriteReg(0x11 + 2 * 7, 0x03000000);  // the low half stays
  EXPECT_EQ(ioapic_.Entry(7), 0x030000000001a9abu);
  EXPECT_EQ(ioapic_.Entry(6), 0x10000u);
  EXPECT_EQ(ioapic_.Entry(8), 0x10000u);
}

TEST_F(IoapicTest, ReadOnlyBitsArePreserved) {
  Program(3, 0x00015000 | kIoapicLevelFixed | (1 << 12) | (1 << 14));  // masked level
  EXPECT_EQ(ioapic_.Entry(3), 0x00018050u);  // delivery status and remote IRR stay 0
  Program(3, kIoapicLevelFixed);
  ioapic_.SetLevel(3, true);  // delivers: remote IRR set
  ASSERT_EQ(sink_.sent.size(), 1u);
  WriteReg(0x10 + 2 * 3, kIoapicLevelFixed & ~0xffu);  // clearing bit 14 in a write does not
  EXPECT_EQ(ioapic_.Entry(3), 0x0000c000u);
}

TEST_F(IoapicTest, UnknownIndexReadsZeroAndIgnoresWrites) {
  WriteReg(0x03, 0xffffffff);
  WriteReg(0x40, 0xffffffff);  // one past entry 23's high dword
  WriteReg(0xff, 0xffffffff);
  EXPECT_EQ(ReadReg(0x03), 0u);
  EXPECT_EQ(ReadReg(0x0f), 0u);
  EXPECT_EQ(ReadReg(0x40), 0u);
  EXPECT_EQ(ioapic_.counters().ignored_register_accesses, 6u);
  EXPECT_EQ(ioapic_.Entry(23), 0x10000u);
}

TEST_F(IoapicTest, EdgeDeliversCompatibilityMessage) {
  // Vector 0x31, lowest priority (1), logical (bit 11), destination 3.
  Program(4, 0x00000931, 0x03000000);
  ioapic_.SetLevel(4, true);
  EXPECT_EQ(sink_.sent, (std::vector<IoapicSentMsi>{Msi(0xFEE03004, 0x00000131)}));
  EXPECT_EQ(ioapic_.irr(), 0u);
  ioapic_.SetLevel(4, false);
  ioapic_.SetLevel(4, true);  // every high call is an edge
  EXPECT_EQ(sink_.sent.size(), 2u);
  EXPECT_EQ(ioapic_.counters().sent, 2u);
}

TEST_F(IoapicTest, PhysicalDestinationMessage) {
  Program(9, kIoapicEdgeFixed, 0x0f000000);
  ioapic_.SetLevel(9, true);
  EXPECT_EQ(sink_.sent, (std::vector<IoapicSentMsi>{Msi(0xFEE0F000, 0x40)}));
}

TEST_F(IoapicTest, MaskedEdgeIsIgnored) {
  Program(4, kIoapicEdgeFixed | Ioapic::kMasked);
  ioapic_.SetLevel(4, true);
  EXPECT_EQ(ioapic_.irr(), 0u);
  Program(4, kIoapicEdgeFixed);  // unmasking does not recall it
  EXPECT_TRUE(sink_.sent.empty());
}

TEST_F(IoapicTest, PinZeroIsAPin) {  // QEMU's ioapic_set_irq would move it to pin 2
  Program(2, kIoapicEdgeFixed);
  Program(0, 0x41);
  ioapic_.SetLevel(0, true);
  EXPECT_EQ(sink_.sent, (std::vector<IoapicSentMsi>{Msi(0xFEE00000, 0x41)}));
}

TEST_F(IoapicTest, LevelWaitsForEoi) {
  Program(14, kIoapicLevelFixed);
  ioapic_.SetLevel(14, true);
  ioapic_.SetLevel(14, true);  // remote IRR set: no second message
  EXPECT_EQ(sink_.sent, (std::vector<IoapicSentMsi>{Msi(0xFEE00000, 0x8050)}));
  EXPECT_NE(ioapic_.Entry(14) & Ioapic::kRemoteIrr, 0u);
  ioapic_.Eoi(0x50);  // still high: again
  EXPECT_EQ(sink_.sent.size(), 2u);
  ioapic_.SetLevel(14, false);
  ioapic_.Eoi(0x50);  // low now: remote IRR clears, nothing is sent
  EXPECT_EQ(sink_.sent.size(), 2u);
  EXPECT_EQ(ioapic_.Entry(14) & Ioapic::kRemoteIrr, 0u);
  ioapic_.SetLevel(14, true);
  EXPECT_EQ(sink_.sent.size(), 3u);
}

TEST_F(IoapicTest, EoiOfAnotherVectorLeavesRemoteIrr) {
  Program(14, kIoapicLevelFixed);
  ioapic_.SetLevel(14, true);
  ioapic_.Eoi(0x51);
  EXPECT_NE(ioapic_.Entry(14) & Ioapic::kRemoteIrr, 0u);
  EXPECT_EQ(sink_.sent.size(), 1u);
}

TEST_F(IoapicTest, MaskedLevelDeliversWhenUnmasked) {
  Program(10, kIoapicLevelFixed | Ioapic::kMasked);
  ioapic_.SetLevel(10, true);
  EXPECT_TRUE(sink_.sent.empty());
  EXPECT_EQ(ioapic_.irr(), 1u << 10);
  Program(10, kIoapicLevelFixed);
  EXPECT_EQ(sink_.sent.size(), 1u);
}

TEST_F(IoapicTest, SwitchingToEdgeClearsRemoteIrr) {
  Program(14, kIoapicLevelFixed);
  ioapic_.SetLevel(14, true);
  Program(14, kIoapicEdgeFixed | Ioapic::kMasked);  // Linux's EOI without an EOI register
  EXPECT_EQ(ioapic_.Entry(14) & Ioapic::kRemoteIrr, 0u);
}

TEST_F(IoapicTest, EoiRegisterAt0x40) {
  Program(14, kIoapicLevelFixed);
  ioapic_.SetLevel(14, true);
  Store(0x100 + Ioapic::kEoi, 0x150);  // above 0xff matches nothing, as in QEMU
  EXPECT_NE(ioapic_.Entry(14) & Ioapic::kRemoteIrr, 0u);
  Store(Ioapic::kEoi, 0x50, 2);  // not 4 bytes
  EXPECT_NE(ioapic_.Entry(14) & Ioapic::kRemoteIrr, 0u);
  EXPECT_EQ(ioapic_.counters().ignored_accesses, 2u);
  Store(Ioapic::kEoi, 0x50);
  EXPECT_EQ(sink_.sent.size(), 2u);   // the line is still high
  EXPECT_EQ(Load(Ioapic::kEoi), 0u);  // write only
}

TEST_F(IoapicTest, RemappableEntryMessage) {
  // Format bit 48, interrupt index 0x1234 in bits 63:49, level, vector 0x50.
  Program(16, kIoapicLevelFixed, (0x1234u << 17) | (1u << 16));
  ioapic_.SetLevel(16, true);
  EXPECT_EQ(sink_.sent,
            (std::vector<IoapicSentMsi>{Msi(0xFEE00000 | 0x1234 << 5 | 1 << 4, 0x8050)}));
}

TEST_F(IoapicTest, RoutesChangedOnEveryEntryWrite) {
  int calls = 0;
  MsiMessage seen;
  ioapic_.OnRoutesChanged([&] {
    ++calls;
    seen = ioapic_.MessageOf(5);
  });
  WriteReg(0x11 + 2 * 5, 0x02000000);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, (MsiMessage{0xFEE02000, 0}));
  WriteReg(0x10 + 2 * 5, 0x10000);  // unchanged still counts
  WriteReg(0x00, 0);                // the ID is no route
  EXPECT_EQ(calls, 2);
  ioapic_.SetLevel(5, true);
  ioapic_.Eoi(0);
  EXPECT_EQ(calls, 2);
  ioapic_.Reset();
  EXPECT_EQ(calls, 3);
}

TEST_F(IoapicTest, MessageOfAndQueries) {
  Program(1, 0x0001c9a0, 0x81000000);  // masked level logical lowest priority, vector 0xa0
  EXPECT_EQ(ioapic_.MessageOf(1), (MsiMessage{0xFEE81004, 0x81a0}));
  EXPECT_TRUE(ioapic_.IsLevel(1));
  EXPECT_TRUE(ioapic_.IsMasked(1));
  EXPECT_EQ(ioapic_.MessageOf(24), MsiMessage{});
  EXPECT_FALSE(ioapic_.IsLevel(24));
  EXPECT_TRUE(ioapic_.IsMasked(24));
  EXPECT_EQ(ioapic_.Entry(24), 0u);
}

TEST_F(IoapicTest, ExtIntIsDropped) {
  Program(2, 0x00000700);
  ioapic_.SetLevel(2, true);
  EXPECT_TRUE(sink_.sent.empty());
  EXPECT_EQ(ioapic_.counters().extint_dropped, 1u);
  EXPECT_EQ(ioapic_.counters().sent, 0u);
}

TEST_F(IoapicTest, BadPinsAreCounted) {
  ioapic_.SetLevel(24, true);
  ioapic_.SetLevel(~0u, true);
  EXPECT_EQ(ioapic_.counters().bad_pins, 2u);
  EXPECT_EQ(ioapic_.irr(), 0u);
}

TEST_F(IoapicTest, BadAccessesReadZeroAndAreIgnored) {
  Store(Ioapic::kRegSel, 0x10);
  EXPECT_EQ(Load(Ioapic::kWindow, 2), 0u);
  EXPECT_EQ(Load(Ioapic::kWindow, 1), 0u);
  Store(Ioapic::kWindow, 0, 2);
  Store(Ioapic::kWindow, 0, 1);
  EXPECT_EQ(Load(0x04), 0u);
  Store(0x04, 0x11);
  Store(Ioapic::kRegSel, 0x11, 3);
  EXPECT_EQ(Load(0x20), 0u);
  EXPECT_EQ(Load(0x1000), 0u);  // past the end: the bus never passes it
  Store(0x1000, 0x11);
  EXPECT_EQ(ioapic_.Entry(0), 0x10000u);
  EXPECT_EQ(ioapic_.register_select(), 0x10);
  EXPECT_EQ(ioapic_.counters().ignored_accesses, 10u);
}

TEST_F(IoapicTest, RegistersRepeatEvery256Bytes) {
  Store(0x300 + Ioapic::kRegSel, 0x01);
  EXPECT_EQ(Load(0xf00 + Ioapic::kWindow), 0x00170020u);
}

TEST_F(IoapicTest, EightByteAccessIsTwoFourByteAccesses) {
  Store(Ioapic::kRegSel, 0xdeadbeef00000001, 8);  // IOREGSEL, then offset 4: ignored
  EXPECT_EQ(ioapic_.register_select(), 0x01);
  EXPECT_EQ(Load(Ioapic::kWindow, 8), 0x00170020u);
  EXPECT_EQ(ioapic_.counters().ignored_accesses, 2u);
}

}  // namespace
}  // namespace minivmm
