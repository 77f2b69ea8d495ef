// The `q35` machine's chipset (pc_chipset.h), as QEMU's `-M q35` with
// `-device edu`, and with `kernel-irqchip=split` and
// `-device intel-iommu,intremap=on`: PCI bus 0 behind configuration
// mechanism #1, the Q35 host bridge at 00:00.0, optionally edu at 00:01.0,
// and either KVM's full irqchip (kvm_irqchip.h, QEMU's q35 default) or, with
// `split_irqchip`, KVM's split irqchip with minivmm's IOAPIC and optionally
// an Intel IOMMU. No firmware runs, so the chipset assigns what SeaBIOS
// would: edu's BAR 0 and its interrupt line.
//
// Interrupts with the split irqchip: every one leaves as an MSI. The
// IOAPIC's (and a PCI function's, with MSI enabled) go to the IOMMU where
// there is one, which remaps them, and from there (or straight) to
// KVM_SIGNAL_MSI. KVM needs to know which vectors a level-triggered IOAPIC
// entry sends, to exit with KVM_EXIT_IOAPIC_EOI at their EOI: the chipset
// keeps one MSI route per IOAPIC pin in KVM's GSI table, each the message
// the entry sends after remapping, updated whenever an entry or the IOMMU's
// remapping changes. With the full irqchip, edu's INTA# is GSI 17 on KVM's
// IOAPIC (KVM_IRQ_LINE) and its MSIs go to KVM_SIGNAL_MSI.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "devices/dma.h"
#include "devices/edu.h"
#include "devices/intel_iommu.h"
#include "devices/ioapic.h"
#include "devices/msi.h"
#include "devices/pci.h"
#include "vmm/core/status_macros.h"
#include "vmm/machine/kvm_irqchip.h"
#include "vmm/machine/pc_chipset.h"
#include "vmm/machine/pc_machine.h"

namespace minivmm {
namespace {

// MSIs into KVM's local APICs.
class KvmMsi final : public MsiSink {
 public:
  explicit KvmMsi(KvmVm* vm) : vm_(vm) {}
  void SendMsi(const MsiMessage& msi, SourceId /*source*/) override {
    absl::StatusOr<bool> delivered = vm_->SignalMsi(msi.address, msi.data);
    if (!delivered.ok()) {
      ++failures_;
    } else if (!*delivered) {
      ++undelivered_;
    }
  }
  uint64_t failures() const { return failures_; }
  uint64_t undelivered() const { return undelivered_; }

 private:
  KvmVm* vm_;
  uint64_t failures_ = 0;
  uint64_t undelivered_ = 0;
};

class Q35Chipset final : public PcChipset, public IoapicEoiSink {
 public:
  explicit Q35Chipset(const VmConfig& config)
      : want_iommu_(config.intel_iommu), want_edu_(config.edu) {
    if (!config.split_irqchip) kvm_irqchip_.emplace("q35", config.pit);
  }

  absl::Status Build(Vm::State& s) override {
    vm_ = &s.vm;
    kvm_msi_.emplace(&s.vm);
    if (kvm_irqchip_) {
      RETURN_IF_ERROR(kvm_irqchip_->Build(s.vm));
      return BuildPci(s, &*kvm_irqchip_, &*kvm_msi_);
    }
    if (absl::Status split = s.vm.CreateSplitIrqchip(Ioapic::kPins); !split.ok())
      return absl::Status(split.code(),
                          absl::StrFormat("the q35 machine cannot run here: %s", split.message()));
    MsiSink* msi = &*kvm_msi_;
    if (want_iommu_) {
      iommu_.emplace(&s.memory, msi);
      iommu_->OnInterruptRemappingChanged([this] { UpdateRoutes().IgnoreError(); });  // counted
      msi = &*iommu_;
      RETURN_IF_ERROR(
          s.mmio_bus.Register(IntelIommu::kMmioBase, IntelIommu::kIoSize, &*iommu_).status());
    }
    ioapic_.emplace(msi, kPcIoapicId);
    ioapic_->OnRoutesChanged([this] { UpdateRoutes().IgnoreError(); });  // counted
    RETURN_IF_ERROR(s.mmio_bus.Register(Ioapic::kMmioBase, Ioapic::kIoSize, &*ioapic_).status());
    RETURN_IF_ERROR(BuildPci(s, &*ioapic_, msi));
    return UpdateRoutes();
  }

  absl::Status SetBiosState(bool at_boot) override {
    return kvm_irqchip_ ? kvm_irqchip_->SetBiosState(at_boot) : absl::OkStatus();
  }

  void DescribeIn(AcpiMachine& acpi) const override {
    if (iommu_) acpi.dmar_register_base = IntelIommu::kMmioBase;
  }

  IoapicEoiSink* ioapic_eoi() override { return ioapic_ ? this : nullptr; }
  void IoapicEoi(uint8_t vector) override { ioapic_->Eoi(vector); }

  // ISA IRQ n: GSI n on KVM's irqchip; on minivmm's IOAPIC pin n, but IRQ 0
  // on pin 2 (the MADT's override).
  void SetLevel(uint32_t irq, bool high) override {
    if (kvm_irqchip_) return kvm_irqchip_->SetLevel(irq, high);
    ioapic_->SetLevel(irq == 0 ? 2 : irq, high);
  }

  std::vector<std::string> notes() const override;

 private:
  // Where the chipset puts edu, as QEMU's q35 with -nodefaults puts the
  // first -device (slot 1), its BAR 0 where SeaBIOS puts the first 1 MiB
  // BAR, and its INTA# on the IOAPIC pin of PIRQ (slot + pin - 1) mod 4
  // (GSIs 16-19, as the ICH9's PIRQ A-D in APIC mode).
  static constexpr uint8_t kHostBridgeDevfn = 0x00;
  static constexpr uint8_t kEduDevfn = 0x08;
  static constexpr uint32_t kEduBar0 = 0xFEA00000;
  static constexpr uint32_t kEduIntxPin = 16 + ((kEduDevfn >> 3) + 1 - 1) % 4;

  // The PCI bus and its functions, edu's INTA# on `intx` and its MSIs to
  // `msi`.
  absl::Status BuildPci(Vm::State& s, IrqLines* intx, MsiSink* msi) {
    RETURN_IF_ERROR(pci_.Add(kHostBridgeDevfn, &host_bridge_));
    if (want_edu_) {
      guest_dma_.emplace(&s.memory);
      DmaSpace* dma = iommu_ ? static_cast<DmaSpace*>(&*iommu_) : &*guest_dma_;
      edu_.emplace(PciInterruptWiring{intx, kEduIntxPin, msi}, dma);
      RETURN_IF_ERROR(edu_->AssignBar(0, kEduBar0));
      RETURN_IF_ERROR(pci_.Add(kEduDevfn, &*edu_));
      // What SeaBIOS leaves: memory decoding on, the interrupt line named.
      edu_->ConfigWrite(kPciCommand, kPciCommandMemory, 2);
      edu_->ConfigWrite(kPciInterruptLine, kEduIntxPin, 1);
      RETURN_IF_ERROR(s.mmio_bus.Register(kEduBar0, Edu::kBar0Size, edu_->bar_window(0)).status());
    }
    return s.pio_bus.Register(PciHost::kPortBase, PciHost::kIoSize, &pci_).status();
  }

  // KVM's GSI routes for the IOAPIC's pins: each entry's message after
  // remapping; an entry whose message the IOMMU would refuse has no route.
  // KVM's table is replaced only when a route changed: a guest programs an
  // entry in two dword writes, and the IOMMU's invalidations are mostly of
  // entries no pin uses.
  absl::Status UpdateRoutes() {
    if (!ioapic_) return absl::OkStatus();  // the IOMMU comes first
    std::vector<KvmVm::MsiRoute> routes;
    for (uint32_t pin = 0; pin < Ioapic::kPins; ++pin) {
      std::optional<MsiMessage> msg = ioapic_->MessageOf(pin);
      if (iommu_) msg = iommu_->RemapQuietly(*msg, std::nullopt);
      if (msg) routes.push_back({pin, msg->address, msg->data});
    }
    if (routes_set_ && routes == routes_) return absl::OkStatus();
    absl::Status set = vm_->SetMsiRoutes(routes);
    if (!set.ok()) {
      ++route_failures_;
      return set;
    }
    routes_ = std::move(routes);
    routes_set_ = true;
    return absl::OkStatus();
  }

  const bool want_iommu_;
  const bool want_edu_;
  KvmVm* vm_ = nullptr;
  std::optional<KvmIrqchip> kvm_irqchip_;  // without the split irqchip
  std::optional<KvmMsi> kvm_msi_;
  std::optional<IntelIommu> iommu_;
  std::optional<Ioapic> ioapic_;
  PciHost pci_;
  Q35HostBridge host_bridge_;
  std::optional<GuestMemoryDma> guest_dma_;
  std::optional<Edu> edu_;
  std::vector<KvmVm::MsiRoute> routes_;  // what KVM has, once routes_set_
  bool routes_set_ = false;
  uint64_t route_failures_ = 0;
};

std::vector<std::string> Q35Chipset::notes() const {
  std::vector<std::string> notes;
  if (kvm_irqchip_) notes = kvm_irqchip_->notes();
  if (iommu_ && (iommu_->dma_faults() != 0 || iommu_->interrupt_faults() != 0))
    notes.push_back(absl::StrFormat(
        "the Intel IOMMU refused %u DMA requests and %u interrupts (%u faults recorded for the "
        "guest, %u lost to a full fault register); the first: %s",
        iommu_->dma_faults(), iommu_->interrupt_faults(), iommu_->recorded_faults(),
        iommu_->overflowed_faults(), iommu_->first_fault()));
  if (iommu_ && iommu_->queue_errors() != 0)
    notes.push_back(absl::StrFormat(
        "the Intel IOMMU stopped its invalidation queue at a bad descriptor %u times (FSTS.IQE)",
        iommu_->queue_errors()));
  if (iommu_ && iommu_->unsupported_settings() != 0)
    notes.push_back(absl::StrFormat(
        "the guest asked the Intel IOMMU for what it does not offer %u times (scalable mode, "
        "256-bit descriptors or x2APIC-mode remapping); ignored",
        iommu_->unsupported_settings()));
  if (edu_ &&
      (edu_->refused_dmas() != 0 || edu_->dma_errors() != 0 || edu_->dmas_without_master() != 0))
    notes.push_back(absl::StrFormat(
        "edu: %u DMAs out of its buffer's bounds refused, %u failed in the IOMMU or outside RAM, "
        "%u without bus mastering",
        edu_->refused_dmas(), edu_->dma_errors(), edu_->dmas_without_master()));
  if (edu_ && edu_->moved_bars() != 0)
    notes.push_back(absl::StrFormat(
        "the guest tried to move edu's BAR %u times; minivmm's BARs stay where the machine put "
        "them (the last try: BAR %d to 0x%x)",
        edu_->moved_bars(), edu_->last_refused_move()->bar, edu_->last_refused_move()->address));
  if (ioapic_ && ioapic_->counters().extint_dropped != 0)
    notes.push_back(
        absl::StrFormat("the IOAPIC dropped %u ExtINT interrupts: the q35 machine has no PIC",
                        ioapic_->counters().extint_dropped));
  if (kvm_msi_ && kvm_msi_->failures() != 0)
    notes.push_back(absl::StrFormat("KVM_SIGNAL_MSI failed %u times", kvm_msi_->failures()));
  if (route_failures_ != 0)
    notes.push_back(absl::StrFormat(
        "KVM_SET_GSI_ROUTING failed %u times: level-triggered IOAPIC entries may miss their EOI",
        route_failures_));
  return notes;
}

}  // namespace

std::unique_ptr<PcChipset> MakeQ35Chipset(const VmConfig& config) {
  return std::make_unique<Q35Chipset>(config);
}

}  // namespace minivmm
