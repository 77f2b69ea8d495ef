#include "devices/fw_cfg.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tests/common/fake_vm.h"

namespace minivmm {
namespace {

constexpr uint64_t kRam = 0x1'2345'6000;  // more than 32 bits, to see every byte

class FwCfgTest : public ::testing::Test {
 protected:
  void Select(uint16_t key) {
    const std::vector<uint8_t> bytes = {static_cast<uint8_t>(key), static_cast<uint8_t>(key >> 8)};
    dev_.Write(FwCfg::kSelectorOffset, bytes, vm_.exit);
  }
  uint8_t InByte(uint64_t offset = FwCfg::kDataOffset) {
    uint8_t data[1] = {0xEE};
    dev_.Read(offset, data, vm_.exit);
    return data[0];
  }
  std::vector<uint8_t> ReadBytes(size_t n) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i < n; ++i) out.push_back(InByte());
    return out;
  }
  std::vector<uint8_t> Item(uint16_t key, size_t n) {
    Select(key);
    return ReadBytes(n);
  }

  testing::FakeVm vm_;
  FwCfg dev_{FwCfgConfig{.cpus = 3, .ram_bytes = kRam}};
};

TEST_F(FwCfgTest, NameIsFwCfg) { EXPECT_EQ(dev_.Name(), "fw-cfg"); }

TEST_F(FwCfgTest, SignatureIsQemu) {
  EXPECT_EQ(Item(kFwCfgSignature, 4), (std::vector<uint8_t>{'Q', 'E', 'M', 'U'}));
}

TEST_F(FwCfgTest, IdSaysTraditionalInterfaceOnly) {
  EXPECT_EQ(Item(kFwCfgId, 4), (std::vector<uint8_t>{1, 0, 0, 0}));
}

TEST_F(FwCfgTest, RamSizeIsLittleEndianU64) {
  EXPECT_EQ(Item(kFwCfgRamSize, 8),
            (std::vector<uint8_t>{0x00, 0x60, 0x45, 0x23, 0x01, 0x00, 0x00, 0x00}));
}

TEST_F(FwCfgTest, NoGraphicIsOne) {
  EXPECT_EQ(Item(kFwCfgNoGraphic, 2), (std::vector<uint8_t>{1, 0}));
}

TEST_F(FwCfgTest, CpuCountsAreLittleEndianU16) {
  EXPECT_EQ(Item(kFwCfgNbCpus, 2), (std::vector<uint8_t>{3, 0}));
  EXPECT_EQ(Item(kFwCfgMaxCpus, 2), (std::vector<uint8_t>{3, 0}));
}

TEST_F(FwCfgTest, CpuCountUsesBothBytes) {
  FwCfg dev(FwCfgConfig{.cpus = 0x0102, .ram_bytes = 0});
  const uint8_t key[2] = {kFwCfgNbCpus, 0};
  dev.Write(FwCfg::kSelectorOffset, key, vm_.exit);
  uint8_t lo[1], hi[1];
  dev.Read(FwCfg::kDataOffset, lo, vm_.exit);
  dev.Read(FwCfg::kDataOffset, hi, vm_.exit);
  EXPECT_EQ(lo[0], 0x02);
  EXPECT_EQ(hi[0], 0x01);
}

TEST_F(FwCfgTest, FileDirectoryIsBigEndianCountZero) {
  EXPECT_EQ(Item(kFwCfgFileDir, 4), (std::vector<uint8_t>{0, 0, 0, 0}));
  EXPECT_EQ(InByte(), 0);  // and nothing after it
}

TEST_F(FwCfgTest, ReadPastItemEndGivesZero) {
  EXPECT_EQ(Item(kFwCfgSignature, 7), (std::vector<uint8_t>{'Q', 'E', 'M', 'U', 0, 0, 0}));
}

TEST_F(FwCfgTest, SelectingAgainRestartsAtByteZero) {
  Select(kFwCfgSignature);
  ReadBytes(2);
  EXPECT_EQ(Item(kFwCfgSignature, 4), (std::vector<uint8_t>{'Q', 'E', 'M', 'U'}));
  Select(kFwCfgSignature);
  ReadBytes(6);  // past the end
  EXPECT_EQ(Item(kFwCfgSignature, 1), (std::vector<uint8_t>{'Q'}));
}

TEST_F(FwCfgTest, SignatureIsSelectedBeforeAnySelect) {
  EXPECT_EQ(ReadBytes(4), (std::vector<uint8_t>{'Q', 'E', 'M', 'U'}));
}

TEST_F(FwCfgTest, UnknownKeysReadZero) {
  for (uint16_t key : {0x0002, 0x0018, 0x001F, 0x0020, 0x3FFF, 0x7FFF, 0xFFFF}) {
    EXPECT_EQ(Item(key, 4), std::vector<uint8_t>(4, 0)) << "key " << key;
  }
}

TEST_F(FwCfgTest, ArchLocalKeysReadZero) {
  EXPECT_EQ(Item(kFwCfgArchLocal | kFwCfgSignature, 4), std::vector<uint8_t>(4, 0));
  EXPECT_EQ(Item(kFwCfgArchLocal | 0x0003, 4), std::vector<uint8_t>(4, 0));  // QEMU's E820
}

TEST_F(FwCfgTest, WriteChannelBitIsIgnoredOnRead) {
  EXPECT_EQ(Item(kFwCfgWriteChannel | kFwCfgSignature, 4),
            (std::vector<uint8_t>{'Q', 'E', 'M', 'U'}));
}

TEST_F(FwCfgTest, DataPortWritesChangeNothing) {
  Select(kFwCfgSignature);
  EXPECT_EQ(InByte(), 'Q');
  const uint8_t byte[1] = {0x55};
  dev_.Write(FwCfg::kDataOffset, byte, vm_.exit);
  EXPECT_EQ(ReadBytes(3), (std::vector<uint8_t>{'E', 'M', 'U'}));
  EXPECT_EQ(Item(kFwCfgSignature, 4), (std::vector<uint8_t>{'Q', 'E', 'M', 'U'}));
  EXPECT_EQ(dev_.ignored_writes(), 1u);
}

TEST_F(FwCfgTest, ByteWriteToSelectorIsADataWriteAndSelectsNothing) {
  Select(kFwCfgNbCpus);
  const uint8_t byte[1] = {kFwCfgSignature};
  dev_.Write(FwCfg::kSelectorOffset, byte, vm_.exit);
  EXPECT_EQ(ReadBytes(2), (std::vector<uint8_t>{3, 0}));
  EXPECT_EQ(dev_.ignored_writes(), 1u);
}

TEST_F(FwCfgTest, WordWriteToDataPortSelectsNothing) {
  Select(kFwCfgNbCpus);
  const uint8_t key[2] = {kFwCfgSignature, 0};
  dev_.Write(FwCfg::kDataOffset, key, vm_.exit);
  EXPECT_EQ(ReadBytes(2), (std::vector<uint8_t>{3, 0}));
}

TEST_F(FwCfgTest, DwordWriteToSelectorSelectsNothing) {
  Select(kFwCfgNbCpus);
  const uint8_t key[4] = {kFwCfgSignature, 0, 0, 0};
  dev_.Write(FwCfg::kSelectorOffset, key, vm_.exit);
  EXPECT_EQ(ReadBytes(2), (std::vector<uint8_t>{3, 0}));
  EXPECT_EQ(dev_.ignored_writes(), 1u);
}

TEST_F(FwCfgTest, ByteReadAtSelectorPortReadsDataAsQemu) {
  Select(kFwCfgSignature);
  EXPECT_EQ(InByte(FwCfg::kSelectorOffset), 'Q');
  EXPECT_EQ(InByte(FwCfg::kDataOffset), 'E');
}

TEST_F(FwCfgTest, WideReadsReturnZeroAndConsumeNothing) {
  Select(kFwCfgSignature);
  for (size_t size : {2, 4, 8}) {
    std::vector<uint8_t> data(size, 0xEE);
    dev_.Read(FwCfg::kDataOffset, data, vm_.exit);
    EXPECT_EQ(data, std::vector<uint8_t>(size, 0)) << size << " bytes";
  }
  EXPECT_EQ(ReadBytes(4), (std::vector<uint8_t>{'Q', 'E', 'M', 'U'}));
}

}  // namespace
}  // namespace minivmm
