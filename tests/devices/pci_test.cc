#include "devices/pci.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/common/device_access.h"
#include "tests/common/fake_vm.h"
#include "tests/common/recording_interrupts.h"

namespace minivmm {
namespace {

using PciLevel = std::pair<uint32_t, bool>;

// A BAR's device that remembers the last write and reads back 0x5a bytes.
class PciScratchDevice final : public IoDevice {
 public:
  std::string_view Name() const override { return "scratch"; }
  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override {
    for (uint8_t& byte : data) byte = 0x5a;
  }
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override {
    last_offset = offset;
    writes++;
  }
  uint64_t last_offset = 0;
  int writes = 0;
};

// A function with everything PciFunction offers: BAR 0 (64 KiB), INTA, MSI.
class PciProbeFunction final : public PciFunction {
 public:
  static constexpr uint32_t kLine = 11;
  PciProbeFunction(IrqLines* lines, MsiSink* sink)
      : PciFunction(PciIdentity{.name = "probe",
                                .vendor_id = 0x1af4,
                                .device_id = 0x1234,
                                .revision = 3,
                                .class_code = 0x020000,
                                .subsystem_vendor_id = 0x1111,
                                .subsystem_id = 0x2222,
                                .interrupt_pin = 1},
                    PciInterruptWiring{lines, kLine, sink}) {
    DeclareMemoryBar(0, 0x10000, &scratch);
    AddMsiCapability();
  }
  using PciFunction::SendMsi;
  using PciFunction::SetIntx;
  PciScratchDevice scratch;
};

constexpr uint8_t kProbeDevfn = 3 << 3;
constexpr uint32_t kProbeBar = 0xfebf0000;
constexpr uint8_t kMsi = kPciMsiCapOffset;

class PciTest : public ::testing::Test {
 protected:
  PciTest() {
    EXPECT_TRUE(host_.Add(Q35HostBridge::kDevfn, &bridge_).ok());
    EXPECT_TRUE(host_.Add(kProbeDevfn, &probe_).ok());
    EXPECT_TRUE(probe_.AssignBar(0, kProbeBar).ok());
  }

  // Port I/O at 0xcf8 + offset, little-endian, as `in`/`out` do it.
  uint32_t In(uint64_t offset, size_t size) {
    return static_cast<uint32_t>(testing::ReadLe(host_, offset, size, vm_.exit));
  }
  void Out(uint64_t offset, size_t size, uint32_t value) {
    testing::WriteLe(host_, offset, size, value, vm_.exit);
  }
  // kvm-unit-tests' pci_config_read*/write* (lib/x86/asm/pci.h): the whole
  // register in CONFIG_ADDRESS, then an access of `size` at 0xcfc.
  uint32_t ConfigRead(uint32_t bdf, uint8_t reg, size_t size) {
    Out(0, 4, PciHost::kEnable | bdf << 8 | reg);
    return In(4, size);
  }
  void ConfigWrite(uint32_t bdf, uint8_t reg, size_t size, uint32_t value) {
    Out(0, 4, PciHost::kEnable | bdf << 8 | reg);
    Out(4, size, value);
  }
  uint32_t WindowRead(uint64_t offset) {
    std::vector<uint8_t> data(4);
    probe_.bar_window(0)->Read(offset, data, vm_.exit);
    return data[0] | data[1] << 8 | data[2] << 16 | uint32_t{data[3]} << 24;
  }
  void WindowWrite(uint64_t offset) {
    std::vector<uint8_t> data(4, 1);
    probe_.bar_window(0)->Write(offset, data, vm_.exit);
  }

  testing::FakeVm vm_;
  testing::RecordingIrqLines lines_;
  testing::RecordingMsiSink sink_;
  Q35HostBridge bridge_;
  PciProbeFunction probe_{&lines_, &sink_};
  PciHost host_;
};

// --- configuration mechanism #1 ---

TEST_F(PciTest, HostNameAndPortsAreQemus) {
  EXPECT_EQ(host_.Name(), "pci-config");
  EXPECT_EQ(PciHost::kPortBase, 0xcf8u);
  EXPECT_EQ(PciHost::kIoSize, 8u);
}

TEST_F(PciTest, ConfigAddressLatchesOnlyAFourByteWriteAt0xcf8) {
  Out(0, 4, 0x80001804);
  EXPECT_EQ(In(0, 4), 0x80001804u);
  EXPECT_EQ(host_.config_address(), 0x80001804u);
  Out(0, 2, 0x1234);
  Out(1, 1, 0x56);
  Out(2, 2, 0x7777);
  EXPECT_EQ(host_.config_address(), 0x80001804u);
  EXPECT_EQ(host_.ignored_writes(), 3u);
}

TEST_F(PciTest, NarrowConfigAddressReadsReturnItsLowBytes) {
  Out(0, 4, 0x80001804);
  EXPECT_EQ(In(0, 1), 0x04u);
  EXPECT_EQ(In(1, 1), 0x04u);  // QEMU's handler ignores the offset
  EXPECT_EQ(In(2, 2), 0x1804u);
}

TEST_F(PciTest, DataReadsAllOnesAndIgnoresWritesWhileDisabled) {
  Out(0, 4, kProbeDevfn << 8 | kPciInterruptLine);  // bit 31 clear
  EXPECT_EQ(In(4, 4), 0xffffffffu);
  EXPECT_EQ(In(4, 1), 0xffu);
  Out(4, 1, 9);
  EXPECT_EQ(host_.ignored_writes(), 1u);
  EXPECT_EQ(probe_.ConfigRead(kPciInterruptLine, 1), 0u);
}

TEST_F(PciTest, ReadsEachSizeWithTheRegisterLowBitsInTheAddress) {
  EXPECT_EQ(ConfigRead(kProbeDevfn, kPciVendorId, 4), 0x12341af4u);
  EXPECT_EQ(ConfigRead(kProbeDevfn, kPciDeviceId, 2), 0x1234u);  // inw 0xcfc, reg 2
  EXPECT_EQ(ConfigRead(kProbeDevfn, 0x0b, 1), 0x02u);            // base class
  EXPECT_EQ(ConfigRead(kProbeDevfn, 0x0a, 1), 0x00u);            // sub-class
  EXPECT_EQ(ConfigRead(kProbeDevfn, kPciRevision, 1), 3u);
}

TEST_F(PciTest, PortOffsetBitsAreOredIntoTheRegister) {
  Out(0, 4, PciHost::kEnable | kProbeDevfn << 8 | kPciVendorId);
  EXPECT_EQ(In(6, 2), 0x1234u);  // 0xcfe: register 2
  EXPECT_EQ(In(5, 1), 0x1au);    // 0xcfd: register 1
  Out(0, 4, PciHost::kEnable | kProbeDevfn << 8 | 0x09);
  EXPECT_EQ(In(6, 1), 0x02u);  // 0x09 | 2 = 0x0b
}

TEST_F(PciTest, WriteThroughTheDataPortReachesTheFunction) {
  ConfigWrite(kProbeDevfn, kPciInterruptLine, 1, 10);
  EXPECT_EQ(probe_.ConfigRead(kPciInterruptLine, 1), 10u);
  EXPECT_EQ(ConfigRead(kProbeDevfn, kPciInterruptLine, 4), 0x0000010au);  // pin 1 above it
}

TEST_F(PciTest, AbsentDevfnReadsAllOnesAndIgnoresWrites) {
  EXPECT_EQ(ConfigRead(1 << 3, kPciVendorId, 2), 0xffffu);
  EXPECT_EQ(ConfigRead(0xff, kPciVendorId, 4), 0xffffffffu);
  ConfigWrite(1 << 3, kPciCommand, 2, 0xffff);
  EXPECT_EQ(host_.ignored_writes(), 1u);
}

TEST_F(PciTest, OtherBusesHaveNoFunctions) {
  EXPECT_EQ(ConfigRead(1 << 8 | kProbeDevfn, kPciVendorId, 4), 0xffffffffu);
  EXPECT_EQ(ConfigRead(0xff00, kPciVendorId, 2), 0xffffu);
  ConfigWrite(1 << 8 | kProbeDevfn, kPciInterruptLine, 1, 5);
  EXPECT_EQ(probe_.ConfigRead(kPciInterruptLine, 1), 0u);
}

TEST_F(PciTest, AccessPastTheLastRegisterIsClipped) {
  ConfigWrite(kProbeDevfn, 0xfe, 4, 0xffffffff);  // 2 bytes at 0xfe-0xff, both read-only
  EXPECT_EQ(ConfigRead(kProbeDevfn, 0xfe, 4), 0u);
  Out(0, 4, PciHost::kEnable | kProbeDevfn << 8 | 0xfc);
  EXPECT_EQ(In(7, 1), 0u);  // register 0xff
}

TEST_F(PciTest, AccessAcrossTheTwoRegistersIsCutInPieces) {
  Out(0, 4, PciHost::kEnable | kProbeDevfn << 8 | kPciVendorId);
  // inl at 0xcfa: CONFIG_ADDRESS's low half, then register 0's word.
  EXPECT_EQ(In(2, 4), 0x1af4u << 16 | (kProbeDevfn << 8));
  Out(0, 4, PciHost::kEnable | kProbeDevfn << 8 | kPciInterruptLine);
  Out(2, 4, 0x00070000);  // a refused address piece, then line = 7
  EXPECT_EQ(probe_.ConfigRead(kPciInterruptLine, 1), 7u);
  EXPECT_EQ(host_.ignored_writes(), 1u);
}

TEST_F(PciTest, AddRefusesNullTakenSlotsAndFunctionsOnABus) {
  PciProbeFunction other(nullptr, nullptr);
  EXPECT_EQ(host_.Add(5, nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(host_.Add(kProbeDevfn, &other).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(host_.Add(9, &probe_).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(host_.function(9), nullptr);
  EXPECT_EQ(probe_.devfn(), kProbeDevfn);
  EXPECT_EQ(probe_.requester_id(), kProbeDevfn);
}

// --- the header ---

TEST_F(PciTest, Q35HostBridgeIsQemusMch) {
  EXPECT_EQ(bridge_.name(), "q35-host-bridge");
  EXPECT_EQ(ConfigRead(0, kPciVendorId, 4), 0x29c08086u);
  EXPECT_EQ(ConfigRead(0, kPciRevision, 4), 0x06000000u);
  EXPECT_EQ(ConfigRead(0, kPciHeaderType, 1), 0u);
  EXPECT_EQ(ConfigRead(0, kPciSubsystemVendorId, 4), 0x11001af4u);
  EXPECT_EQ(ConfigRead(0, kPciStatus, 2), 0u);
  EXPECT_EQ(ConfigRead(0, kPciCapabilityList, 1), 0u);
  EXPECT_EQ(ConfigRead(0, kPciInterruptPin, 1), 0u);
  for (int bar = 0; bar < kPciBars; ++bar) {
    ConfigWrite(0, kPciBar0 + 4 * bar, 4, 0xffffffff);
    EXPECT_EQ(ConfigRead(0, kPciBar0 + 4 * bar, 4), 0u);
  }
  ConfigWrite(0, 0x60, 4, 0xb0000001);  // PCIEXBAR: not emulated
  EXPECT_EQ(ConfigRead(0, 0x60, 4), 0u);
}

TEST_F(PciTest, HeaderFieldsAreTheIdentity) {
  EXPECT_EQ(probe_.ConfigRead(kPciVendorId, 2), 0x1af4u);
  EXPECT_EQ(probe_.ConfigRead(kPciDeviceId, 2), 0x1234u);
  EXPECT_EQ(probe_.ConfigRead(kPciRevision, 4), 0x02000003u);
  EXPECT_EQ(probe_.ConfigRead(kPciHeaderType, 1), 0u);
  EXPECT_EQ(probe_.ConfigRead(kPciSubsystemVendorId, 2), 0x1111u);
  EXPECT_EQ(probe_.ConfigRead(kPciSubsystemId, 2), 0x2222u);
  EXPECT_EQ(probe_.ConfigRead(kPciInterruptPin, 1), 1u);
  EXPECT_EQ(probe_.ConfigRead(kPciCommand, 2), 0u);
}

TEST_F(PciTest, CommandKeepsOnlyMemoryMasterAndIntxDisable) {
  ConfigWrite(kProbeDevfn, kPciCommand, 2, 0xffff);
  EXPECT_EQ(ConfigRead(kProbeDevfn, kPciCommand, 2), 0x0406u);
  EXPECT_TRUE(probe_.memory_enabled());
  EXPECT_TRUE(probe_.bus_master());
  EXPECT_TRUE(probe_.intx_disabled());
  ConfigWrite(kProbeDevfn, kPciCommand, 1, kPciCommandIo | kPciCommandMaster);
  EXPECT_EQ(ConfigRead(kProbeDevfn, kPciCommand, 2), 0x0404u);  // I/O space stays 0
}

TEST_F(PciTest, ReadOnlyFieldsIgnoreWrites) {
  for (uint8_t reg : {0x00, 0x08, 0x0c, 0x2c, 0x34, 0x3d, 0x80, 0xfc}) {
    const uint32_t before = probe_.ConfigRead(reg, 4);
    ConfigWrite(kProbeDevfn, reg, 4, 0xa5a5a5a5);
    EXPECT_EQ(probe_.ConfigRead(reg, 4), before) << "register " << int{reg};
  }
  ConfigWrite(kProbeDevfn, kPciStatus, 2, 0xffff);
  EXPECT_EQ(probe_.ConfigRead(kPciStatus, 2), kPciStatusCapList);
}

// --- BARs ---

TEST_F(PciTest, BarReadsItsAssignedAddress) {
  EXPECT_EQ(ConfigRead(kProbeDevfn, kPciBar0, 4), kProbeBar);
  EXPECT_EQ(probe_.bar_address(0), kProbeBar);
  EXPECT_EQ(probe_.bar_size(0), 0x10000u);
  EXPECT_TRUE(probe_.has_bar(0));
  EXPECT_FALSE(probe_.has_bar(1));
  EXPECT_EQ(probe_.bar_window(1), nullptr);
}

TEST_F(PciTest, BarSizingAndRestoreAsKvmUnitTests) {
  // lib/pci.c's pci_bar_size_helper.
  const uint32_t bar = ConfigRead(kProbeDevfn, kPciBar0, 4);
  ConfigWrite(kProbeDevfn, kPciBar0, 4, ~0u);
  EXPECT_EQ(ConfigRead(kProbeDevfn, kPciBar0, 4), 0xffff0000u);  // ~(size - 1) | flags 0
  ConfigWrite(kProbeDevfn, kPciBar0, 4, bar);
  EXPECT_EQ(ConfigRead(kProbeDevfn, kPciBar0, 4), kProbeBar);
  EXPECT_EQ(probe_.moved_bars(), 0u);
  EXPECT_EQ(probe_.last_refused_move(), std::nullopt);
}

TEST_F(PciTest, BarSizingByWords) {
  ConfigWrite(kProbeDevfn, kPciBar0, 2, 0xffff);  // low half: flags and bits below size
  EXPECT_EQ(ConfigRead(kProbeDevfn, kPciBar0, 4), kProbeBar);
  ConfigWrite(kProbeDevfn, kPciBar0 + 2, 2, 0xffff);
  EXPECT_EQ(ConfigRead(kProbeDevfn, kPciBar0, 4), 0xffff0000u);
  EXPECT_EQ(probe_.moved_bars(), 0u);
}

TEST_F(PciTest, MovingABarIsRefusedAndRemembered) {
  ConfigWrite(kProbeDevfn, kPciBar0, 4, 0xe0000000);
  EXPECT_EQ(ConfigRead(kProbeDevfn, kPciBar0, 4), kProbeBar);
  ConfigWrite(kProbeDevfn, kPciBar0 + 3, 1, 0x12);
  EXPECT_EQ(ConfigRead(kProbeDevfn, kPciBar0, 4), kProbeBar);
  EXPECT_EQ(probe_.moved_bars(), 2u);
  EXPECT_EQ(probe_.last_refused_move(), (PciRefusedBarMove{0, 0x12bf0000}));
  EXPECT_EQ(probe_.bar_address(0), kProbeBar);
}

TEST_F(PciTest, RefusedMoveAfterSizingRestoresTheAssignedAddress) {
  ConfigWrite(kProbeDevfn, kPciBar0, 4, ~0u);
  ConfigWrite(kProbeDevfn, kPciBar0, 4, 0);
  EXPECT_EQ(ConfigRead(kProbeDevfn, kPciBar0, 4), kProbeBar);
  EXPECT_EQ(probe_.moved_bars(), 1u);
}

TEST_F(PciTest, UndeclaredBarsReadZero) {
  for (int bar = 1; bar < kPciBars; ++bar) {
    ConfigWrite(kProbeDevfn, kPciBar0 + 4 * bar, 4, ~0u);
    EXPECT_EQ(ConfigRead(kProbeDevfn, kPciBar0 + 4 * bar, 4), 0u);
  }
  EXPECT_EQ(probe_.moved_bars(), 0u);
}

TEST_F(PciTest, AssignBarRefusesBadAddressesAndMissingBars) {
  PciProbeFunction fresh(nullptr, nullptr);
  EXPECT_EQ(fresh.AssignBar(0, 0xfebf8000).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fresh.AssignBar(1, 0xfeb00000).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fresh.AssignBar(-1, 0xfeb00000).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fresh.AssignBar(6, 0xfeb00000).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fresh.bar_address(0), 0u);
  EXPECT_TRUE(fresh.AssignBar(0, 0xffff0000).ok());  // ends exactly at 4 GiB
}

TEST_F(PciTest, BarWindowForwardsWhileMemorySpaceIsOn) {
  EXPECT_EQ(probe_.bar_window(0)->Name(), "probe");
  ConfigWrite(kProbeDevfn, kPciCommand, 2, kPciCommandMemory);
  EXPECT_EQ(WindowRead(0x10), 0x5a5a5a5au);
  WindowWrite(0x20);
  EXPECT_EQ(probe_.scratch.writes, 1);
  EXPECT_EQ(probe_.scratch.last_offset, 0x20u);
  EXPECT_EQ(probe_.undecoded_accesses(), 0u);
}

TEST_F(PciTest, BarWindowReadsAllOnesWhileMemorySpaceIsOff) {
  EXPECT_EQ(WindowRead(0x10), 0xffffffffu);
  WindowWrite(0x20);
  EXPECT_EQ(probe_.scratch.writes, 0);
  EXPECT_EQ(probe_.undecoded_accesses(), 2u);
}

// --- MSI ---

TEST_F(PciTest, CapabilityWalkFindsMsi) {
  // lib/pci.c's pci_cap_walk.
  EXPECT_NE(ConfigRead(kProbeDevfn, kPciStatus, 2) & kPciStatusCapList, 0u);
  const uint8_t cap = ConfigRead(kProbeDevfn, kPciCapabilityList, 1);
  EXPECT_EQ(cap, 0x40);
  EXPECT_EQ(ConfigRead(kProbeDevfn, cap, 1), 0x05u);  // PCI_CAP_ID_MSI
  EXPECT_EQ(ConfigRead(kProbeDevfn, cap + 1, 1), 0u);
  EXPECT_EQ(ConfigRead(kProbeDevfn, cap + kPciMsiControl, 2), kPciMsi64Bit);
}

TEST_F(PciTest, MsiControlKeepsOnlyTheEnableBit) {
  ConfigWrite(kProbeDevfn, kMsi + kPciMsiControl, 2, 0xffff);
  EXPECT_EQ(ConfigRead(kProbeDevfn, kMsi + kPciMsiControl, 2), 0x0081u);  // MME reads 0
  EXPECT_TRUE(probe_.msi_enabled());
  ConfigWrite(kProbeDevfn, kMsi + kPciMsiControl, 2, 0);
  EXPECT_FALSE(probe_.msi_enabled());
}

TEST_F(PciTest, MsiAddressAndDataAsKvmUnitTestsWritesThem) {
  // lib/pci.c's pci_setup_msi on a 64-bit capability.
  ConfigWrite(kProbeDevfn, kMsi + kPciMsiAddressLo, 4, 0xfee0100f);
  ConfigWrite(kProbeDevfn, kMsi + kPciMsiAddressHi, 4, 0x00000001);
  ConfigWrite(kProbeDevfn, kMsi + kPciMsiData, 4, 0xabcd4041);
  EXPECT_EQ(ConfigRead(kProbeDevfn, kMsi + kPciMsiAddressLo, 4), 0xfee0100cu);
  EXPECT_EQ(ConfigRead(kProbeDevfn, kMsi + kPciMsiData, 4), 0x4041u);
  EXPECT_EQ(probe_.msi_message(), (MsiMessage{0x1fee0100c, 0x4041}));
}

TEST_F(PciTest, SendMsiGoesFromTheRequesterId) {
  ConfigWrite(kProbeDevfn, kMsi + kPciMsiAddressLo, 4, 0xfee00000);
  ConfigWrite(kProbeDevfn, kMsi + kPciMsiData, 2, 0x41);
  ConfigWrite(kProbeDevfn, kMsi + kPciMsiControl, 2, kPciMsiEnable);
  ConfigWrite(kProbeDevfn, kPciCommand, 2, kPciCommandMaster);
  probe_.SendMsi();
  EXPECT_EQ(sink_.sent,
            (std::vector<testing::RecordingMsiSink::Sent>{{{0xfee00000, 0x41}, kProbeDevfn}}));
  EXPECT_EQ(probe_.dropped_msis(), 0u);
}

TEST_F(PciTest, SendMsiIsDroppedWithoutBusMasterOrEnable) {
  ConfigWrite(kProbeDevfn, kMsi + kPciMsiControl, 2, kPciMsiEnable);
  probe_.SendMsi();  // bus master off
  ConfigWrite(kProbeDevfn, kMsi + kPciMsiControl, 2, 0);
  ConfigWrite(kProbeDevfn, kPciCommand, 2, kPciCommandMaster);
  probe_.SendMsi();  // MSI off
  EXPECT_TRUE(sink_.sent.empty());
  EXPECT_EQ(probe_.dropped_msis(), 2u);
}

// --- INTx ---

TEST_F(PciTest, IntxPassesOnlyChangesAndSetsStatusBit3) {
  probe_.SetIntx(true);
  EXPECT_NE(probe_.ConfigRead(kPciStatus, 2) & kPciStatusInterrupt, 0u);
  probe_.SetIntx(true);
  probe_.SetIntx(false);
  EXPECT_EQ(probe_.ConfigRead(kPciStatus, 2) & kPciStatusInterrupt, 0u);
  probe_.SetIntx(false);
  EXPECT_EQ(lines_.calls, (std::vector<PciLevel>{{PciProbeFunction::kLine, true},
                                                 {PciProbeFunction::kLine, false}}));
}

TEST_F(PciTest, IntxDisableMasksTheLineButNotTheStatus) {
  probe_.SetIntx(true);
  ConfigWrite(kProbeDevfn, kPciCommand, 2, kPciCommandIntxDisable);
  EXPECT_NE(probe_.ConfigRead(kPciStatus, 2) & kPciStatusInterrupt, 0u);
  EXPECT_FALSE(probe_.intx_output());
  ConfigWrite(kProbeDevfn, kPciCommand, 2, kPciCommandIntxDisable | kPciCommandMemory);
  ConfigWrite(kProbeDevfn, kPciCommand, 2, 0);  // re-enabled: the level returns
  EXPECT_EQ(lines_.calls, (std::vector<PciLevel>{{PciProbeFunction::kLine, true},
                                                 {PciProbeFunction::kLine, false},
                                                 {PciProbeFunction::kLine, true}}));
}

TEST_F(PciTest, IntxRaisedWhileDisabledAppearsOnEnable) {
  ConfigWrite(kProbeDevfn, kPciCommand, 2, kPciCommandIntxDisable);
  probe_.SetIntx(true);
  EXPECT_TRUE(lines_.calls.empty());
  EXPECT_TRUE(probe_.intx_asserted());
  ConfigWrite(kProbeDevfn, kPciCommand, 2, 0);
  EXPECT_EQ(lines_.calls, (std::vector<PciLevel>{{PciProbeFunction::kLine, true}}));
}

TEST_F(PciTest, WritingTheMsiCapabilityWithMsiOnDeassertsIntx) {
  probe_.SetIntx(true);
  ConfigWrite(kProbeDevfn, kMsi + kPciMsiControl, 2, kPciMsiEnable);
  EXPECT_FALSE(probe_.intx_asserted());
  EXPECT_EQ(probe_.ConfigRead(kPciStatus, 2) & kPciStatusInterrupt, 0u);
  EXPECT_EQ(lines_.calls, (std::vector<PciLevel>{{PciProbeFunction::kLine, true},
                                                 {PciProbeFunction::kLine, false}}));
}

}  // namespace
}  // namespace minivmm
