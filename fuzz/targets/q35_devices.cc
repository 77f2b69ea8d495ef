// Fuzzes the q35 machine's chipset devices wired as vmm/machine/q35_chipset.cc
// wires them: PCI configuration mechanism #1 with the Q35 host bridge and
// edu, edu's BAR, the IOAPIC and the Intel IOMMU, whose root, context, page
// and interrupt remapping tables and invalidation queue live in a 256 KiB
// guest RAM that the input writes as well. Any access at any offset and
// width, any table contents, any IOAPIC line and EOI, any MSI from any
// requester.
//
// Invariants: nothing crashes, leaks or touches memory outside RAM (ASan,
// UBSan); an edu DMA that fails (in the IOMMU, outside RAM) changes no byte
// of RAM, since the IOMMU writes all of a request or none of it; an MSI
// into the IOMMU becomes at most one message on KVM's side (the message
// remapped or passed on, or the fault event of its refusal); the devices'
// counters never go down.
//
// Input: repeated u8 op, then by op % 8:
//   0 poke RAM: u32 offset (% RAM), u8 length (% 65), that many bytes
//   1 PCI config port: u8 (bit 0 write, bits 1-3 port offset), u8 width (% 5), data
//   2 edu BAR: u32 offset (% 1 MiB), u8 width (% 9), data for a write (bit 0 of op >> 3)
//   3 IOAPIC: u16 offset (% 0x1000), u8 width (% 9), data for a write (bit 0 of op >> 3)
//   4 IOMMU: u16 offset (% 0x1000), u8 width (% 9), data for a write (bit 0 of op >> 3)
//   5 IOAPIC line: u8 pin (% 26: two past the last), level = bit 0 of op >> 3
//   6 IOAPIC EOI: u8 vector
//   7 MSI into the IOMMU: u64 address, u32 data, u16 requester (none if bit 0 of op >> 3)
// Data bytes missing at the input's end read as 0x5A.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "common/input.h"
#include "devices/dma.h"
#include "devices/edu.h"
#include "devices/intel_iommu.h"
#include "devices/ioapic.h"
#include "devices/pci.h"
#include "tests/common/fake_vm.h"

namespace minivmm::fuzz {
namespace {

constexpr size_t kRam = 256 * 1024;
constexpr uint8_t kEduDevfn = 0x08;
constexpr uint32_t kEduLine = 17;

// KVM's side: counts what reaches it.
class CountingSink final : public MsiSink {
 public:
  void SendMsi(const MsiMessage&, SourceId) override { ++received; }
  uint64_t received = 0;
};

std::vector<uint8_t> Data(Input& in, size_t width) {
  std::vector<uint8_t> buf(width, 0x5A);
  const auto bytes = in.Bytes(width);
  if (!bytes.empty()) std::memcpy(buf.data(), bytes.data(), bytes.size());
  return buf;
}

void Access(IoDevice& device, uint64_t offset, bool write, Input& in, size_t width,
            ExitContext& ctx) {
  if (write) {
    const std::vector<uint8_t> buf = Data(in, width);
    device.Write(offset, buf, ctx);
  } else {
    std::vector<uint8_t> buf(width, 0xEE);
    device.Read(offset, buf, ctx);
  }
}

}  // namespace
}  // namespace minivmm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace minivmm;
  using namespace minivmm::fuzz;
  Input in(data, size);
  testing::FakeVm vm(kRam, /*gdt_size=*/0);
  CountingSink kvm;
  IntelIommu iommu(&vm.memory, &kvm);
  Ioapic ioapic(&iommu);
  Edu edu(PciInterruptWiring{&ioapic, kEduLine, &iommu}, &iommu);
  PciHost pci;
  Q35HostBridge bridge;
  FUZZ_CHECK(pci.Add(0, &bridge).ok());
  FUZZ_CHECK(edu.AssignBar(0, 0xFEA00000).ok());
  FUZZ_CHECK(pci.Add(kEduDevfn, &edu).ok());
  edu.ConfigWrite(kPciCommand, kPciCommandMemory, 2);
  IoDevice& bar = *edu.bar_window(0);
  std::vector<uint8_t> before;

  while (!in.empty()) {
    const uint8_t op = in.U8();
    const bool flag = (op >> 3) & 1;
    const uint64_t downstream_before = kvm.received;
    const uint64_t iommu_sent_before = iommu.remapped_interrupts();
    const uint64_t dma_errors_before = edu.dma_errors();
    switch (op % 8) {
      case 0: {
        const uint32_t at = in.U32() % kRam;
        const std::vector<uint8_t> bytes = Data(in, in.U8() % 65);
        const size_t n = std::min(bytes.size(), kRam - at);
        if (n != 0) std::memcpy(vm.ram.data() + at, bytes.data(), n);
        break;
      }
      case 1: {
        const uint8_t how = in.U8();
        Access(pci, (how >> 1) & 7, how & 1, in, in.U8() % 5, vm.exit);
        break;
      }
      case 2: {
        const uint64_t offset = in.U32() % Edu::kBar0Size;
        const size_t width = in.U8() % 9;
        // An edu DMA happens at a write of its command register: RAM before it.
        if (flag) before.assign(vm.ram.begin(), vm.ram.end());
        Access(bar, offset, flag, in, width, vm.exit);
        if (flag && edu.dma_errors() != dma_errors_before)
          FUZZ_CHECK(std::memcmp(before.data(), vm.ram.data(), kRam) == 0);
        break;
      }
      case 3: {
        const uint64_t offset = in.U16() % Ioapic::kIoSize;
        Access(ioapic, offset, flag, in, in.U8() % 9, vm.exit);
        break;
      }
      case 4: {
        const uint64_t offset = in.U16() % IntelIommu::kIoSize;
        Access(iommu, offset, flag, in, in.U8() % 9, vm.exit);
        break;
      }
      case 5:
        ioapic.SetLevel(in.U8() % (Ioapic::kPins + 2), flag);
        break;
      case 6:
        ioapic.Eoi(in.U8());
        break;
      case 7: {
        const uint64_t address = in.U64();
        const uint32_t msi_data = in.U32();
        const uint16_t requester = in.U16();
        iommu.SendMsi(MsiMessage{address, msi_data}, flag ? SourceId{} : SourceId{requester});
        FUZZ_CHECK(kvm.received - downstream_before <= 1);
        break;
      }
    }
    FUZZ_CHECK(kvm.received >= downstream_before);
    FUZZ_CHECK(iommu.remapped_interrupts() >= iommu_sent_before);
    FUZZ_CHECK(edu.dma_errors() >= dma_errors_before);
  }
  return 0;
}
