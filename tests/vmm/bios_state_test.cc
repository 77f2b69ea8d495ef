// The PC machine's BIOS-left vector table read back as a real-mode CPU reads
// it: far pointers (offset, then segment) at vector * 4, the handler's bytes
// at segment * 16 + offset. The PICs' and the PIT's state need KVM:
// tests/integration/pc_machine_test.cc checks them from inside a guest.
#include "vmm/boot/bios_state.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "minivmm/guest_memory.h"

namespace minivmm {
namespace {

constexpr uint64_t kBiosTestRamSize = 2 << 20;

uint32_t IvtWord(const std::vector<uint8_t>& ram, uint64_t gpa) { return ram[gpa] | ram[gpa + 1] << 8; }

// Where vector `v` goes: its handler's linear address.
uint64_t VectorHandler(const std::vector<uint8_t>& ram, uint32_t v) {
  return (uint64_t{IvtWord(ram, v * 4 + 2)} << 4) + IvtWord(ram, v * 4);
}

TEST(BiosStateTest, EveryVectorHasAHandlerThatReturns) {
  std::vector<uint8_t> ram(kBiosTestRamSize, 0);
  GuestMemory memory(ram);
  ASSERT_TRUE(WriteBiosInterruptVectors(memory).ok());
  for (uint32_t v = 0; v < kBiosIvtVectors; ++v) {
    const uint64_t at = VectorHandler(ram, v);
    ASSERT_GE(at, 0xF0000u) << "vector " << v;
    // Each handler ends in its first iret (0xCF), within 16 bytes.
    bool returns = false;
    for (uint64_t i = at; i < at + 16 && !returns; ++i) returns = ram[i] == 0xCF;
    EXPECT_TRUE(returns) << "vector " << v;
  }
}

TEST(BiosStateTest, IrqVectorsAcknowledgeTheirPics) {
  std::vector<uint8_t> ram(kBiosTestRamSize, 0);
  GuestMemory memory(ram);
  ASSERT_TRUE(WriteBiosInterruptVectors(memory).ok());
  // `out imm8, al` (0xE6 port) after `mov al, 0x20` (0xB0 0x20): a
  // non-specific EOI to the PIC at `port`.
  auto eois = [&ram](uint64_t at) {
    std::vector<uint32_t> ports;
    bool al_is_eoi = false;
    for (uint64_t i = at; ram[i] != 0xCF; ++i) {
      if (ram[i] == 0xB0) al_is_eoi = ram[i + 1] == 0x20, ++i;
      else if (ram[i] == 0xE6 && al_is_eoi) ports.push_back(ram[++i]);
    }
    return ports;
  };
  for (uint32_t irq = 0; irq < 8; ++irq) {
    EXPECT_EQ(eois(VectorHandler(ram, kBiosPicMaster.vector_base + irq)),
              (std::vector<uint32_t>{0x20}))
        << "IRQ " << irq;
    EXPECT_EQ(eois(VectorHandler(ram, kBiosPicSlave.vector_base + irq)),
              (std::vector<uint32_t>{0xA0, 0x20}))
        << "IRQ " << irq + 8;
  }
  EXPECT_TRUE(eois(VectorHandler(ram, 0x10)).empty());
  EXPECT_EQ(VectorHandler(ram, 0x10), (uint64_t{kBiosSegment} << 4) + kBiosIretOffset);
}

TEST(BiosStateTest, RamBelowOneMiBIsRefusedAndUntouched) {
  std::vector<uint8_t> ram(512 << 10, 0);
  GuestMemory memory(ram);
  absl::Status status = WriteBiosInterruptVectors(memory);
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange) << status;
  EXPECT_EQ(ram, std::vector<uint8_t>(512 << 10, 0));
}

}  // namespace
}  // namespace minivmm
