#include "devices/pc_testdev.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/common/device_access.h"
#include "tests/common/fake_vm.h"
#include "tests/common/recording_interrupts.h"

namespace minivmm {
namespace {

using Level = std::pair<uint32_t, bool>;

class RecordingHostPages final : public HostPages {
 public:
  void FlushHostPage(uint64_t gpa) override { flushed.push_back(gpa); }
  std::vector<uint64_t> flushed;
};

class PcTestdevTest : public ::testing::Test {
 protected:
  // Little-endian value of `size` bytes, as an `in` or MMIO read returns it.
  uint64_t In(IoDevice& device, uint64_t offset, size_t size) {
    return testing::ReadLe(device, offset, size, vm_.exit);
  }
  void Out(IoDevice& device, uint64_t offset, size_t size, uint64_t value) {
    testing::WriteLe(device, offset, size, value, vm_.exit);
  }

  testing::FakeVm vm_;
  testing::RecordingIrqLines lines_;
  RecordingHostPages pages_;
  PcTestdev dev_{&lines_, &pages_};
};

TEST_F(PcTestdevTest, NamesReadWellInTheExitTables) {
  EXPECT_EQ(dev_.ports.Name(), "pc-testdev");
  EXPECT_EQ(dev_.irq.Name(), "pc-testdev-irq");
  EXPECT_EQ(dev_.iomem.Name(), "pc-testdev-iomem");
}

TEST_F(PcTestdevTest, AddressesAreQemus) {
  EXPECT_EQ(PcTestdevPorts::kPortBase, 0xe0u);
  EXPECT_EQ(PcTestdevPorts::kPortBase + PcTestdevPorts::kFlushOffset, 0xe4u);
  EXPECT_EQ(PcTestdevPorts::kPortBase + PcTestdevPorts::kDataAliasOffset, 0xe8u);
  EXPECT_EQ(PcTestdevPorts::kIoSize, 12u);
  EXPECT_EQ(PcTestdevIrq::kPortBase, 0x2000u);
  EXPECT_EQ(PcTestdevIrq::kIoSize, 24u);
  EXPECT_EQ(PcTestdevIomem::kMmioBase, 0xff000000u);
  EXPECT_EQ(PcTestdevIomem::kIoSize, 0x10000u);
}

// --- ports 0xe0-0xeb ---

TEST_F(PcTestdevTest, DataRegisterReadsZeroAtFirst) {
  EXPECT_EQ(In(dev_.ports, 0, 4), 0u);
  EXPECT_EQ(In(dev_.ports, 8, 4), 0u);
}

TEST_F(PcTestdevTest, DataRegisterKeepsEachSize) {
  Out(dev_.ports, 0, 4, 0x12345678);
  EXPECT_EQ(In(dev_.ports, 0, 4), 0x12345678u);
  Out(dev_.ports, 0, 2, 0x9999);  // emulator.c's outw before `rep insb`
  EXPECT_EQ(In(dev_.ports, 0, 4), 0x12349999u);
  Out(dev_.ports, 0, 1, 0xab);
  EXPECT_EQ(In(dev_.ports, 0, 4), 0x123499abu);
  EXPECT_EQ(In(dev_.ports, 0, 1), 0xabu);
  EXPECT_EQ(In(dev_.ports, 0, 2), 0x99abu);
  EXPECT_EQ(dev_.ports.data_register(), 0x123499abu);
}

TEST_F(PcTestdevTest, DataRegisterBytesAtEachOffset) {
  Out(dev_.ports, 0, 4, 0x44332211);
  EXPECT_EQ(In(dev_.ports, 1, 1), 0x22u);
  EXPECT_EQ(In(dev_.ports, 2, 2), 0x4433u);
  EXPECT_EQ(In(dev_.ports, 3, 1), 0x44u);
  Out(dev_.ports, 2, 2, 0xbeef);  // only bytes 2 and 3 change
  EXPECT_EQ(In(dev_.ports, 0, 4), 0xbeef2211u);
  Out(dev_.ports, 1, 2, 0xcafe);  // unaligned: QEMU splits it into bytes
  EXPECT_EQ(In(dev_.ports, 0, 4), 0xbecafe11u);
}

TEST_F(PcTestdevTest, Port0xe8IsTheSameRegister) {
  Out(dev_.ports, 0, 4, 0x11223344);
  EXPECT_EQ(In(dev_.ports, 8, 4), 0x11223344u);
  EXPECT_EQ(In(dev_.ports, 9, 1), 0x33u);
  EXPECT_EQ(In(dev_.ports, 10, 2), 0x1122u);
  Out(dev_.ports, 11, 1, 0xaa);
  EXPECT_EQ(In(dev_.ports, 0, 4), 0xaa223344u);
  Out(dev_.ports, 8, 2, 0x5566);
  EXPECT_EQ(In(dev_.ports, 0, 4), 0xaa225566u);
}

TEST_F(PcTestdevTest, FlushPortTakesAFourByteWrite) {
  Out(dev_.ports, 4, 4, 0x00123abc);
  EXPECT_EQ(dev_.ports.flush_requests(), 1u);
  EXPECT_EQ(dev_.ports.last_flush_address(), 0x00123abcu);
  EXPECT_EQ(pages_.flushed, std::vector<uint64_t>{0x00123000u});  // its page
  EXPECT_EQ(dev_.ports.ignored_writes(), 0u);
  EXPECT_EQ(In(dev_.ports, 0, 4), 0u);  // the data register is untouched
}

TEST_F(PcTestdevTest, FlushPortIgnoresNarrowerWrites) {
  Out(dev_.ports, 4, 1, 0x12);
  Out(dev_.ports, 4, 2, 0x1234);
  Out(dev_.ports, 5, 1, 0x12);
  Out(dev_.ports, 6, 2, 0x1234);
  Out(dev_.ports, 7, 1, 0x12);
  EXPECT_EQ(dev_.ports.flush_requests(), 0u);
  EXPECT_TRUE(pages_.flushed.empty());
  EXPECT_EQ(dev_.ports.ignored_writes(), 5u);
  EXPECT_EQ(In(dev_.ports, 0, 4), 0u);
}

TEST_F(PcTestdevTest, FlushPortReadsZero) {
  Out(dev_.ports, 0, 4, 0xffffffff);
  EXPECT_EQ(In(dev_.ports, 4, 4), 0u);
  EXPECT_EQ(In(dev_.ports, 5, 2), 0u);
  EXPECT_EQ(In(dev_.ports, 7, 1), 0u);
}

TEST_F(PcTestdevTest, AccessAcrossRegionsIsSplitAsQemuSplitsIt) {
  Out(dev_.ports, 0, 4, 0x44332211);
  // outl at 0xe2: bytes 2-3 of the register, then a refused 2-byte flush piece.
  Out(dev_.ports, 2, 4, 0xddccbbaa);
  EXPECT_EQ(In(dev_.ports, 0, 4), 0xbbaa2211u);
  EXPECT_EQ(dev_.ports.flush_requests(), 0u);
  EXPECT_EQ(dev_.ports.ignored_writes(), 1u);
  // outl at 0xe6: a refused flush piece, then bytes 0-1 through the alias.
  Out(dev_.ports, 6, 4, 0x99887766);
  EXPECT_EQ(In(dev_.ports, 0, 4), 0xbbaa9988u);
  EXPECT_EQ(dev_.ports.ignored_writes(), 2u);
  // inl at 0xe2 and 0xe6: the flush bytes read 0.
  EXPECT_EQ(In(dev_.ports, 2, 4), 0x0000bbaau);
  EXPECT_EQ(In(dev_.ports, 6, 4), 0x99880000u);
}

TEST_F(PcTestdevTest, WideAccessCoveringTheFlushPortFlushes) {
  // No port access is 8 bytes, but the device takes any size: QEMU's pieces
  // would be 4 bytes of register, then a whole flush piece.
  Out(dev_.ports, 0, 8, 0x0000500011223344);
  EXPECT_EQ(In(dev_.ports, 0, 4), 0x11223344u);
  EXPECT_EQ(dev_.ports.flush_requests(), 1u);
  EXPECT_EQ(dev_.ports.last_flush_address(), 0x5000u);
  EXPECT_EQ(pages_.flushed, std::vector<uint64_t>{0x5000u});
}

TEST_F(PcTestdevTest, PortBytesPastTheEndReadZeroAndAreNotWritten) {
  Out(dev_.ports, 0, 4, 0x44332211);
  EXPECT_EQ(In(dev_.ports, 11, 2), 0x44u);
  EXPECT_EQ(In(dev_.ports, 12, 1), 0u);
  EXPECT_EQ(In(dev_.ports, ~uint64_t{0}, 4), 0u);
  Out(dev_.ports, 11, 4, 0xffffff55);
  Out(dev_.ports, ~uint64_t{0}, 4, 0xffffffff);
  EXPECT_EQ(In(dev_.ports, 0, 4), 0x55332211u);
}

// --- ports 0x2000-0x2017 ---

TEST_F(PcTestdevTest, IrqWriteSetsTheLineOfItsPort) {
  Out(dev_.irq, 0x0e, 1, 1);  // ioapic.c's set_irq_line(0x0e, 1)
  Out(dev_.irq, 0x0e, 1, 0);
  Out(dev_.irq, 0, 1, 0x80);  // any nonzero value is high
  Out(dev_.irq, 15, 1, 0xff);
  EXPECT_EQ(lines_.calls, (std::vector<Level>{{14, true}, {14, false}, {0, true}, {15, true}}));
}

TEST_F(PcTestdevTest, IrqRepeatsArePassedOn) {
  Out(dev_.irq, 0x0e, 1, 1);
  Out(dev_.irq, 0x0e, 1, 1);
  Out(dev_.irq, 0x0e, 1, 0);
  Out(dev_.irq, 0x0e, 1, 0);
  EXPECT_EQ(lines_.calls, (std::vector<Level>{{14, true}, {14, true}, {14, false}, {14, false}}));
}

TEST_F(PcTestdevTest, WiderIrqWriteSetsOneLinePerByte) {
  Out(dev_.irq, 2, 2, 0x0100);  // QEMU takes only 1-byte pieces: line 2 low, 3 high
  Out(dev_.irq, 4, 4, 0x00010200);
  EXPECT_EQ(
      lines_.calls,
      (std::vector<Level>{{2, false}, {3, true}, {4, false}, {5, true}, {6, true}, {7, false}}));
}

TEST_F(PcTestdevTest, IrqLinesPast15AreIgnoredAndCounted) {
  Out(dev_.irq, 16, 1, 1);
  Out(dev_.irq, 23, 1, 1);
  Out(dev_.irq, 14, 4, 0x01010101);  // lines 14 and 15, then two refused bytes
  EXPECT_EQ(lines_.calls, (std::vector<Level>{{14, true}, {15, true}}));
  EXPECT_EQ(dev_.irq.ignored_writes(), 4u);
}

TEST_F(PcTestdevTest, IrqBytesPastTheEndAreNotLines) {
  Out(dev_.irq, 24, 1, 1);
  Out(dev_.irq, ~uint64_t{0}, 4, 0x01010101);
  EXPECT_TRUE(lines_.calls.empty());
  EXPECT_EQ(dev_.irq.ignored_writes(), 0u);
}

TEST_F(PcTestdevTest, IrqPortsReadZero) {
  Out(dev_.irq, 1, 1, 1);
  EXPECT_EQ(In(dev_.irq, 1, 1), 0u);
  EXPECT_EQ(In(dev_.irq, 0, 4), 0u);
  EXPECT_EQ(In(dev_.irq, 22, 2), 0u);
  EXPECT_EQ(lines_.calls.size(), 1u);  // a read moves no line
}

// --- MMIO 0xff000000-0xff00ffff ---

TEST_F(PcTestdevTest, IomemReadsZeroAtFirst) {
  EXPECT_EQ(In(dev_.iomem, 0, 8), 0u);
  EXPECT_EQ(In(dev_.iomem, 0x8000, 4), 0u);
  EXPECT_EQ(In(dev_.iomem, 0xfff8, 8), 0u);
  for (uint8_t byte : dev_.iomem.bytes()) ASSERT_EQ(byte, 0);
}

TEST_F(PcTestdevTest, IomemKeepsWhatEachSizeWrote) {
  Out(dev_.iomem, 0x100, 8, 0x0123456789abcdef);
  EXPECT_EQ(In(dev_.iomem, 0x100, 8), 0x0123456789abcdefu);
  EXPECT_EQ(In(dev_.iomem, 0x104, 4), 0x01234567u);
  EXPECT_EQ(In(dev_.iomem, 0x102, 2), 0x89abu);
  EXPECT_EQ(In(dev_.iomem, 0x107, 1), 0x01u);
  Out(dev_.iomem, 0x101, 1, 0x55);
  Out(dev_.iomem, 0x102, 2, 0x6677);
  Out(dev_.iomem, 0x103, 4, 0xaabbccdd);  // unaligned
  EXPECT_EQ(In(dev_.iomem, 0x100, 8), 0x01aabbccdd7755efu);
  EXPECT_EQ(dev_.iomem.bytes()[0x101], 0x55);
}

TEST_F(PcTestdevTest, IomemEdges) {
  Out(dev_.iomem, 0, 1, 0x11);
  Out(dev_.iomem, 0xfff8, 8, 0x8877665544332211);
  EXPECT_EQ(In(dev_.iomem, 0, 1), 0x11u);
  EXPECT_EQ(In(dev_.iomem, 0xffff, 1), 0x88u);
  EXPECT_EQ(In(dev_.iomem, 0xfffc, 4), 0x88776655u);
  // Bytes past the end (the bus never passes them) read 0 and are not kept.
  EXPECT_EQ(In(dev_.iomem, 0xfffe, 4), 0x8877u);
  EXPECT_EQ(In(dev_.iomem, 0x10000, 8), 0u);
  EXPECT_EQ(In(dev_.iomem, ~uint64_t{0}, 8), 0u);
  Out(dev_.iomem, 0xffff, 2, 0x9999);
  Out(dev_.iomem, ~uint64_t{0}, 8, ~uint64_t{0});
  EXPECT_EQ(In(dev_.iomem, 0xffff, 1), 0x99u);
  EXPECT_EQ(In(dev_.iomem, 0, 1), 0x11u);
}

TEST_F(PcTestdevTest, IomemIsNotTheDataRegister) {
  Out(dev_.iomem, 0, 4, 0x12345678);
  EXPECT_EQ(In(dev_.ports, 0, 4), 0u);
}

}  // namespace
}  // namespace minivmm
