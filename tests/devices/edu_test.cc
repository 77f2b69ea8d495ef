#include "devices/edu.h"

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/common/device_access.h"
#include "tests/common/fake_vm.h"
#include "tests/common/recording_interrupts.h"

namespace minivmm {
namespace {

using EduLevel = std::pair<uint32_t, bool>;

// 64 KiB of device-visible memory at address 0 that records every access,
// and fails them all when `fail` is set (an IOMMU fault).
class EduFakeDma final : public DmaSpace {
 public:
  struct Access {
    uint16_t source;
    uint64_t address;
    size_t size;
    bool write;
    bool operator==(const Access&) const = default;
  };
  bool Read(uint16_t source, uint64_t address, std::span<uint8_t> out) override {
    accesses.push_back({source, address, out.size(), false});
    if (fail || address > ram.size() || out.size() > ram.size() - address) return false;
    std::memcpy(out.data(), ram.data() + address, out.size());
    return true;
  }
  bool Write(uint16_t source, uint64_t address, std::span<const uint8_t> in) override {
    accesses.push_back({source, address, in.size(), true});
    if (fail || address > ram.size() || in.size() > ram.size() - address) return false;
    std::memcpy(ram.data() + address, in.data(), in.size());
    return true;
  }
  std::vector<uint8_t> ram = std::vector<uint8_t>(0x10000);
  std::vector<Access> accesses;
  bool fail = false;
};

constexpr uint8_t kEduDevfn = 4 << 3;
constexpr uint32_t kEduLine = 10;
constexpr uint64_t kBuffer = Edu::kDmaBufferAddress;

class EduTest : public ::testing::Test {
 protected:
  EduTest() {
    EXPECT_TRUE(host_.Add(kEduDevfn, &edu_).ok());
    EXPECT_TRUE(edu_.AssignBar(0, 0xfea00000).ok());
    edu_.ConfigWrite(kPciCommand, kPciCommandMemory | kPciCommandMaster, 2);
  }

  uint64_t Read(uint64_t offset, size_t size = 4) {
    return testing::ReadLe(*edu_.bar_window(0), offset, size, vm_.exit);
  }
  void Write(uint64_t offset, uint64_t value, size_t size = 4) {
    testing::WriteLe(*edu_.bar_window(0), offset, size, value, vm_.exit);
  }
  // lib/pci-edu.c's edu_dma.
  void Dma(uint64_t from, uint64_t to, uint64_t count, uint64_t command) {
    Write(Edu::kDmaSource, from, 8);
    Write(Edu::kDmaDestination, to, 8);
    Write(Edu::kDmaCount, count, 8);
    Write(Edu::kDmaCommand, command);
  }
  void EnableMsi() {
    edu_.ConfigWrite(kPciMsiCapOffset + kPciMsiAddressLo, 0xfee00000, 4);
    edu_.ConfigWrite(kPciMsiCapOffset + kPciMsiData, 0x4041, 2);
    edu_.ConfigWrite(kPciMsiCapOffset + kPciMsiControl, kPciMsiEnable, 2);
  }

  testing::FakeVm vm_;
  testing::RecordingIrqLines lines_;
  testing::RecordingMsiSink sink_;
  EduFakeDma dma_;
  Edu edu_{PciInterruptWiring{&lines_, kEduLine, &sink_}, &dma_};
  PciHost host_;
};

TEST_F(EduTest, PciIdentityIsQemus) {
  EXPECT_EQ(edu_.name(), "edu");
  EXPECT_EQ(edu_.ConfigRead(kPciVendorId, 4), 0x11e81234u);
  EXPECT_EQ(edu_.ConfigRead(kPciRevision, 4), 0x00ff0010u);  // sub-class 0xff, base 0
  EXPECT_EQ(edu_.ConfigRead(kPciSubsystemVendorId, 4), 0x11001af4u);
  EXPECT_EQ(edu_.ConfigRead(kPciInterruptPin, 1), 1u);
  EXPECT_EQ(edu_.ConfigRead(kPciCapabilityList, 1), kPciMsiCapOffset);
  EXPECT_EQ(edu_.ConfigRead(kPciMsiCapOffset, 4), 0x00800005u);
  edu_.ConfigWrite(kPciBar0, ~0u, 4);
  EXPECT_EQ(edu_.ConfigRead(kPciBar0, 4), 0xfff00000u);  // 1 MiB, 32-bit memory
  edu_.ConfigWrite(kPciBar0, 0xfea00000, 4);
  EXPECT_EQ(edu_.moved_bars(), 0u);
  EXPECT_EQ(edu_.bar_window(0)->Name(), "edu");
  EXPECT_EQ(edu_.requester_id(), kEduDevfn);
}

TEST_F(EduTest, IdentificationRegister) { EXPECT_EQ(Read(Edu::kId), 0x010000edu); }

TEST_F(EduTest, LowRegistersTakeOnlyFourBytes) {
  EXPECT_EQ(Read(Edu::kId, 8), ~uint64_t{0});  // edu_mmio_read's size check
  Write(Edu::kLiveness, 5, 2);
  Write(Edu::kLiveness, 5, 1);
  EXPECT_EQ(Read(Edu::kLiveness), 0u);
  EXPECT_EQ(edu_.ignored_accesses(), 3u);
}

TEST_F(EduTest, NarrowPiecesReadZeroAsQemusMemoryCore) {
  EXPECT_EQ(Read(Edu::kId, 2), 0u);
  EXPECT_EQ(Read(Edu::kId, 1), 0u);
  EXPECT_EQ(Read(Edu::kDmaSource, 2), 0u);
  EXPECT_EQ(edu_.ignored_accesses(), 3u);
}

TEST_F(EduTest, MisalignedAccessIsCutIntoAlignedPieces) {
  // A 4-byte read at 0x2: two refused 2-byte pieces.
  EXPECT_EQ(Read(Edu::kId + 2), 0u);
  // An 8-byte write at 0x4: liveness, then factorial.
  Write(Edu::kLiveness, uint64_t{4} << 32 | 1, 8);
  EXPECT_EQ(Read(Edu::kLiveness), 0xfffffffeu);
  EXPECT_EQ(Read(Edu::kFactorial), 24u);
}

TEST_F(EduTest, LivenessReadsTheComplement) {
  EXPECT_EQ(Read(Edu::kLiveness), 0u);
  Write(Edu::kLiveness, 1);  // lib/pci-edu.c's edu_check_alive
  EXPECT_EQ(Read(Edu::kLiveness), 0xfffffffeu);
  Write(Edu::kLiveness, 0x12345678);
  EXPECT_EQ(Read(Edu::kLiveness), 0xedcba987u);
}

TEST_F(EduTest, FactorialIsReadyAtOnceAndWrapsAt32Bits) {
  Write(Edu::kFactorial, 5);
  EXPECT_EQ(Read(Edu::kStatus) & Edu::kStatusComputing, 0u);
  EXPECT_EQ(Read(Edu::kFactorial), 120u);
  Write(Edu::kFactorial, 0);
  EXPECT_EQ(Read(Edu::kFactorial), 1u);
  Write(Edu::kFactorial, 12);
  EXPECT_EQ(Read(Edu::kFactorial), 479001600u);
  Write(Edu::kFactorial, 13);
  EXPECT_EQ(Read(Edu::kFactorial), 1932053504u);  // 13! mod 2^32
  Write(Edu::kFactorial, 34);
  EXPECT_EQ(Read(Edu::kFactorial), 0u);
  Write(Edu::kFactorial, 0xffffffff);  // stops once the product is 0
  EXPECT_EQ(Read(Edu::kFactorial), 0u);
  EXPECT_EQ(edu_.irq_status(), 0u);
}

TEST_F(EduTest, StatusKeepsOnlyTheFactorialInterruptBit) {
  Write(Edu::kStatus, 0xff);
  EXPECT_EQ(Read(Edu::kStatus), Edu::kStatusIrqFactorial);
  Write(Edu::kStatus, 0x7f);
  EXPECT_EQ(Read(Edu::kStatus), 0u);
}

TEST_F(EduTest, FactorialRaisesItsInterruptWhenAsked) {
  Write(Edu::kStatus, Edu::kStatusIrqFactorial);
  Write(Edu::kFactorial, 3);
  EXPECT_EQ(Read(Edu::kIrqStatus), Edu::kIrqFactorial);
  EXPECT_EQ(lines_.calls, (std::vector<EduLevel>{{kEduLine, true}}));
}

TEST_F(EduTest, ReadOnlyAndWriteOnlyRegisters) {
  Write(Edu::kId, 0);
  Write(Edu::kIrqStatus, 0xff);
  Write(0x10, 1);
  EXPECT_EQ(Read(Edu::kId), 0x010000edu);
  EXPECT_EQ(Read(Edu::kIrqStatus), 0u);
  EXPECT_EQ(Read(Edu::kIrqRaise), 0xffffffffu);
  EXPECT_EQ(Read(Edu::kIrqAck), 0xffffffffu);
  EXPECT_EQ(Read(0x10), 0xffffffffu);
  EXPECT_EQ(Read(0xffffc), 0xffffffffu);
  EXPECT_EQ(edu_.ignored_accesses(), 3u);
}

TEST_F(EduTest, RaiseAndAckDriveIntxWithoutMsi) {
  Write(Edu::kIrqRaise, 0x10);
  Write(Edu::kIrqRaise, 0x20);  // still high: IrqLines hears nothing new
  EXPECT_EQ(Read(Edu::kIrqStatus), 0x30u);
  EXPECT_NE(edu_.ConfigRead(kPciStatus, 2) & kPciStatusInterrupt, 0u);
  Write(Edu::kIrqAck, 0x10);
  EXPECT_EQ(lines_.calls, (std::vector<EduLevel>{{kEduLine, true}}));
  Write(Edu::kIrqAck, 0x20);
  EXPECT_EQ(Read(Edu::kIrqStatus), 0u);
  EXPECT_EQ(lines_.calls, (std::vector<EduLevel>{{kEduLine, true}, {kEduLine, false}}));
  EXPECT_TRUE(sink_.sent.empty());
}

TEST_F(EduTest, RaisingZeroWithNothingPendingDoesNothing) {
  Write(Edu::kIrqRaise, 0);  // intel-iommu.c writes it after its ISR acked
  EXPECT_TRUE(lines_.calls.empty());
  EXPECT_TRUE(sink_.sent.empty());
}

TEST_F(EduTest, RaiseSendsTheMsiWhenEnabled) {
  EnableMsi();
  Write(Edu::kIrqRaise, 1);
  Write(Edu::kIrqRaise, 1);  // every raise with status set sends again, as QEMU
  EXPECT_EQ(sink_.sent, (std::vector<testing::RecordingMsiSink::Sent>(
                            2, testing::RecordingMsiSink::Sent{{0xfee00000, 0x4041}, kEduDevfn})));
  Write(Edu::kIrqAck, 1);
  EXPECT_EQ(Read(Edu::kIrqStatus), 0u);
  EXPECT_TRUE(lines_.calls.empty());
}

TEST_F(EduTest, MsiWithoutBusMasterIsDropped) {
  EnableMsi();
  edu_.ConfigWrite(kPciCommand, kPciCommandMemory, 2);
  Write(Edu::kIrqRaise, 1);
  EXPECT_TRUE(sink_.sent.empty());
  EXPECT_EQ(edu_.dropped_msis(), 1u);
}

TEST_F(EduTest, DmaFromRamToTheBuffer) {
  for (int i = 0; i < 16; ++i) dma_.ram[0x1000 + i] = static_cast<uint8_t>(0xa0 + i);
  Dma(0x1000, kBuffer + 8, 16, Edu::kDmaStart);
  EXPECT_EQ(Read(Edu::kDmaCommand), 0u);  // already done
  for (int i = 0; i < 16; ++i) EXPECT_EQ(edu_.dma_buffer()[8 + i], 0xa0 + i);
  EXPECT_EQ(dma_.accesses, (std::vector<EduFakeDma::Access>{{kEduDevfn, 0x1000, 16, false}}));
  EXPECT_EQ(edu_.irq_status(), 0u);
}

TEST_F(EduTest, DmaFromTheBufferToRamRaisesWhenAsked) {
  for (int i = 0; i < 4; ++i) dma_.ram[0x2000 + i] = static_cast<uint8_t>(1 + i);
  Dma(0x2000, kBuffer, 4, Edu::kDmaStart);
  Dma(kBuffer, 0x3004, 4, Edu::kDmaStart | Edu::kDmaToRam | Edu::kDmaIrq);
  EXPECT_EQ(0, std::memcmp(&dma_.ram[0x3004], &dma_.ram[0x2000], 4));
  EXPECT_EQ(dma_.accesses.back(), (EduFakeDma::Access{kEduDevfn, 0x3004, 4, true}));
  EXPECT_EQ(Read(Edu::kDmaCommand), Edu::kDmaToRam | Edu::kDmaIrq);
  EXPECT_EQ(Read(Edu::kIrqStatus), Edu::kIrqDma);
  EXPECT_EQ(lines_.calls, (std::vector<EduLevel>{{kEduLine, true}}));
}

TEST_F(EduTest, DmaRegistersKeep64Bits) {
  Write(Edu::kDmaSource, 0x123456789abcdef0, 8);
  EXPECT_EQ(Read(Edu::kDmaSource, 8), 0x123456789abcdef0u);
  EXPECT_EQ(Read(Edu::kDmaSource), 0x9abcdef0u);
  EXPECT_EQ(Read(Edu::kDmaSource + 4), 0xffffffffu);  // no register at +4
  Write(Edu::kDmaSource, 0x11111111);                 // zero-extended
  EXPECT_EQ(Read(Edu::kDmaSource, 8), 0x11111111u);
}

TEST_F(EduTest, CommandWithoutStartIsIgnored) {
  Write(Edu::kDmaCommand, Edu::kDmaIrq);
  EXPECT_EQ(Read(Edu::kDmaCommand), 0u);
  EXPECT_TRUE(dma_.accesses.empty());
  EXPECT_EQ(edu_.irq_status(), 0u);
}

TEST_F(EduTest, RamAddressIsClampedTo28Bits) {
  dma_.ram[0x1234] = 0x77;
  Dma(0xfff0001234, kBuffer, 1, Edu::kDmaStart);
  EXPECT_EQ(dma_.accesses.back().address, 0x1234u);
  EXPECT_EQ(edu_.dma_buffer()[0], 0x77);
}

TEST_F(EduTest, BufferRangeOutsideTheBufferIsRefused) {
  Dma(0x1000, kBuffer + 4090, 16, Edu::kDmaStart | Edu::kDmaIrq);  // runs past its end
  Dma(0x1000, kBuffer - 1, 1, Edu::kDmaStart);                     // starts before it
  Dma(~uint64_t{0}, 0x1000, 2, Edu::kDmaStart | Edu::kDmaToRam);   // wraps
  Dma(kBuffer, 0x1000, ~uint64_t{0}, Edu::kDmaStart | Edu::kDmaToRam);
  EXPECT_TRUE(dma_.accesses.empty());
  EXPECT_EQ(edu_.refused_dmas(), 4u);
  EXPECT_EQ(Read(Edu::kDmaCommand), Edu::kDmaToRam);  // each one completed
  EXPECT_EQ(edu_.irq_status(), Edu::kIrqDma);
}

TEST_F(EduTest, WholeBufferAndEmptyTransfersAreAllowed) {
  Dma(0, kBuffer, Edu::kDmaBufferSize, Edu::kDmaStart);
  Dma(0, kBuffer + Edu::kDmaBufferSize, 0, Edu::kDmaStart);
  EXPECT_EQ(edu_.refused_dmas(), 0u);
  EXPECT_EQ(dma_.accesses.size(), 2u);
}

TEST_F(EduTest, FailedDmaCopiesNothingAndCompletes) {
  dma_.ram[0] = 0x55;
  dma_.fail = true;
  Dma(0, kBuffer, 4, Edu::kDmaStart | Edu::kDmaIrq);
  Dma(kBuffer, 0, 4, Edu::kDmaStart | Edu::kDmaToRam);
  EXPECT_EQ(edu_.dma_errors(), 2u);
  EXPECT_EQ(edu_.dma_buffer()[0], 0);
  EXPECT_EQ(Read(Edu::kDmaCommand), Edu::kDmaToRam);
  EXPECT_EQ(edu_.irq_status(), Edu::kIrqDma);
}

TEST_F(EduTest, DmaNeedsBusMaster) {
  edu_.ConfigWrite(kPciCommand, kPciCommandMemory, 2);
  dma_.ram[0] = 0x55;
  Dma(0, kBuffer, 4, Edu::kDmaStart | Edu::kDmaIrq);
  EXPECT_TRUE(dma_.accesses.empty());
  EXPECT_EQ(edu_.dmas_without_master(), 1u);
  EXPECT_EQ(edu_.dma_buffer()[0], 0);
  EXPECT_EQ(edu_.irq_status(), Edu::kIrqDma);  // it still completes
}

TEST_F(EduTest, RegistersAreUnreachableWithMemorySpaceOff) {
  edu_.ConfigWrite(kPciCommand, kPciCommandMaster, 2);
  EXPECT_EQ(Read(Edu::kId), 0xffffffffu);
  Write(Edu::kLiveness, 1);
  edu_.ConfigWrite(kPciCommand, kPciCommandMemory, 2);
  EXPECT_EQ(Read(Edu::kLiveness), 0u);
  EXPECT_EQ(edu_.undecoded_accesses(), 2u);
}

}  // namespace
}  // namespace minivmm
