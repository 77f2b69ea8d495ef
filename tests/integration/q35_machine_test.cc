// Whole-VM tests of the q35 machine (VmConfig::machine = kQ35) with the
// project's own guest pc_q35 (tests/pc_guests/pc_q35.c): PCI bus 0, QEMU's
// edu device, KVM's full irqchip or its split irqchip with minivmm's own
// IOAPIC, and with the latter the Intel IOMMU's DMA and interrupt
// remapping, each checked from the inside; every access the guest made to
// each device of minivmm's is one exit at that device, exactly.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "minivmm/machine.h"
#include "tests/integration/pc_test_util.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
namespace {

struct Q35Case {
  bool split;  // KVM's split irqchip (minivmm's IOAPIC); else KVM's full one
  bool iommu;  // with split only
  uint32_t cpus;
};

VmConfig Q35Config(const Q35Case& c) {
  VmConfig config = PcConfig("pc_q35", "", c.cpus);
  config.machine = MachineKind::kQ35;
  config.split_irqchip = c.split;
  config.intel_iommu = c.iommu;
  config.edu = true;
  return config;
}

bool HasMmioDevice(const GuestRun& run, const std::string& name) {
  return std::find(run.result.mmio_devices.begin(), run.result.mmio_devices.end(), name) !=
         run.result.mmio_devices.end();
}

class Q35MachineTest : public ::testing::TestWithParam<Q35Case> {};

// The guest's own counts of its accesses to each device are minivmm's exits
// at that device. With the split irqchip the IOAPIC is minivmm's, and each
// level-triggered interrupt's EOI is one ioapic_eoi exit; with the full one
// KVM's IOAPIC takes the accesses and the EOIs in the kernel.
void ExpectExitsAsCounted(const GuestRun& run, const std::map<std::string, std::string>& v,
                          const Q35Case& c) {
  const bool iommu = c.iommu;
  EXPECT_EQ(run.Pio("pci-config"), Number(v, "pci_config_accesses"));
  EXPECT_EQ(run.Mmio("edu"), Number(v, "edu_accesses"));
  EXPECT_GT(Number(v, "ioapic_accesses"), 0u);
  if (c.split) {
    EXPECT_EQ(run.Mmio("ioapic"), Number(v, "ioapic_accesses"));
    EXPECT_EQ(run.result.stats.by_reason[static_cast<int>(ExitReason::kIoapicEoi)],
              Number(v, "level_eois"));
  } else {
    EXPECT_FALSE(HasMmioDevice(run, "ioapic"));
    EXPECT_EQ(run.result.stats.by_reason[static_cast<int>(ExitReason::kIoapicEoi)], 0u);
  }
  if (iommu) {
    EXPECT_EQ(run.Mmio("intel-iommu"), Number(v, "iommu_accesses"));
  } else {
    EXPECT_EQ(Number(v, "iommu_accesses"), 0u);
  }
}

TEST_P(Q35MachineTest, EduDmaAndInterruptsThroughTheIommuAndTheIoapic) {
  REQUIRE_KVM();
  const Q35Case c = GetParam();
  std::optional<GuestRun> ran = RunPc(Q35Config(c));
  if (!ran) return;
  const GuestRun& run = *ran;
  ExpectDoneWith(run, 0);
  std::map<std::string, std::string> v = ConsoleValues(run.console);
  // The counts share one line: "pci_config_accesses=N edu_accesses=N ...".
  std::istringstream counts(v["pci_config_accesses"]);
  std::string word;
  counts >> v["pci_config_accesses"];
  while (counts >> word) {
    const size_t eq = word.find('=');
    if (eq != std::string::npos) v[word.substr(0, eq)] = word.substr(eq + 1);
  }
  EXPECT_EQ(v["q35"], "pass");
  EXPECT_EQ(v["level_remote_irr"], "0");
  // The machine's PCI bus: the host bridge, and edu where the chipset put it.
  EXPECT_EQ(v["pci_functions"], "2");
  EXPECT_EQ(v["host_bridge"], "8086:29c0 class=0x060000");
  EXPECT_EQ(v["edu_devfn"], "0x08");
  EXPECT_EQ(v["edu_bar0"], "0xfea00000");
  EXPECT_EQ(v["edu_bar0_size"], "0x100000");
  EXPECT_EQ(v["edu_int_pin"], "1");
  EXPECT_EQ(v["edu_int_line"], "17");
  EXPECT_EQ(v["edu_msi_cap"], "0x40");
  EXPECT_EQ(v["edu_factorial"], "3628800");
  EXPECT_EQ(v["ioapic_version"], c.split ? "0x20" : "0x11");  // minivmm's, or KVM's
  EXPECT_EQ(v["ioapic_pins"], "24");
  // One interrupt per raise, edge and MSI; a level-triggered one is sent
  // again at each EOI while edu holds its line, three times in all.
  EXPECT_EQ(v["ir_ioapic_interrupts"], "1");
  EXPECT_EQ(v["ir_msi_interrupts"], "1");
  EXPECT_EQ(v["level_interrupts"], "3");
  EXPECT_EQ(v["level_eois"], "3");
  EXPECT_EQ(v["stray_interrupts"], "0");
  EXPECT_EQ(v["timed_out"], "0");
  if (c.iommu) {
    EXPECT_EQ(v["iommu"], "present");
    EXPECT_EQ(v["dmar_base"], "0xfed90000 haw=38 include_pci_all=1");
    EXPECT_EQ(v["iommu_gsts"], "0xc7000000");  // TE, RTPS, QIE, IRE, IRTPS
    EXPECT_EQ(v["dma_roundtrip"], "ok");
    // A write to a read-only page and a read of an unmapped one: refused,
    // recorded with edu's requester ID, one fault event each.
    EXPECT_EQ(v["ro_page_untouched"], "1");
    EXPECT_EQ(v["ro_fault_reason"], "0x5");
    EXPECT_EQ(v["ro_fault_sid"], "0x8");
    EXPECT_EQ(v["ro_fault_addr"], "0x2000");
    EXPECT_EQ(v["ro_fault_t"], "0");
    EXPECT_EQ(v["unmapped_fault_reason"], "0x6");
    EXPECT_EQ(v["unmapped_fault_addr"], "0x3000");
    EXPECT_EQ(v["unmapped_fault_t"], "1");
    EXPECT_EQ(v["qi_status_written"], "1");
    EXPECT_EQ(v["qi_head_equals_tail"], "1");
    // An MSI to an IRTE that is not present, and one whose IRTE names
    // another requester: no interrupt, a fault each.
    EXPECT_EQ(v["ir_not_present_interrupts"], "0");
    EXPECT_EQ(v["ir_not_present_fault_reason"], "0x22");
    EXPECT_EQ(v["ir_sid_mismatch_interrupts"], "0");
    EXPECT_EQ(v["ir_sid_mismatch_fault_reason"], "0x26");
    EXPECT_EQ(v["fault_event_interrupts"], "4");
    // What the run's notes say of them: the first one, and how many; and
    // edu's two DMAs that the IOMMU refused.
    ASSERT_EQ(run.result.notes.size(), 2u) << absl::StrJoin(run.result.notes, "\n");
    EXPECT_EQ(run.result.notes[0],
              "the Intel IOMMU refused 2 DMA requests and 2 interrupts (4 faults recorded for "
              "the guest, 0 lost to a full fault register); the first: DMA fault 0x5 (write to "
              "a page without W): 00:01.0 write 0x2000");
    EXPECT_EQ(run.result.notes[1],
              "edu: 0 DMAs out of its buffer's bounds refused, 2 failed in the IOMMU or outside "
              "RAM, 0 without bus mastering");
  } else {
    EXPECT_EQ(v["iommu"], "absent");
    EXPECT_TRUE(run.result.notes.empty()) << absl::StrJoin(run.result.notes, "\n");
  }
  ExpectExitsAsCounted(run, v, c);
}

INSTANTIATE_TEST_SUITE_P(Machines, Q35MachineTest,
                         ::testing::Values(Q35Case{true, true, 1}, Q35Case{true, true, 2},
                                           Q35Case{true, false, 1}, Q35Case{false, false, 1},
                                           Q35Case{false, false, 2}),
                         [](const ::testing::TestParamInfo<Q35Case>& info) {
                           return std::string(info.param.split ? "Split" : "Full") +
                                  (info.param.iommu ? "Iommu" : "") + "Cpus" +
                                  std::to_string(info.param.cpus);
                         });

// Without edu the bus has the host bridge alone: the guest fails its
// search for edu at once, and says so.
TEST(Q35MachineTest, WithoutEduTheBusHasTheHostBridgeAlone) {
  REQUIRE_KVM();
  VmConfig config = Q35Config({.split = true, .iommu = true, .cpus = 1});
  config.edu = false;
  std::optional<GuestRun> ran = RunPc(config);
  if (!ran) return;
  EXPECT_EQ(ran->result.reason, StopReason::kGuestShutdown) << ran->result.detail;
  EXPECT_NE(ran->console.find("pci_functions=1\n"), std::string::npos) << ran->console;
  EXPECT_NE(ran->console.find("FAIL: no edu device (1234:11e8) on bus 0"), std::string::npos)
      << ran->console;
}

}  // namespace
}  // namespace minivmm::testing
