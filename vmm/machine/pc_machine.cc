// The PC machine (docs/machines.md): KVM's in-kernel local APICs, IOAPIC and
// PICs (and its PIT when asked); a Multiboot-1 image entered on vCPU 0 in
// 32-bit protected mode, the other vCPUs in reset state until the guest
// starts them with INIT/SIPI; the Multiboot information, ACPI tables, fw_cfg,
// the ACPI PM timer, COM1 and the debug-exit port. No hypercall port and no
// GDT trap: an access to their addresses is an unclaimed one.
#include "vmm/machine/pc_machine.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "devices/fw_cfg.h"
#include "devices/irq_lines.h"
#include "devices/pc_testdev.h"
#include "devices/pm_timer.h"
#include "minivmm_abi/boot.h"
#include "vmm/boot/acpi_tables.h"
#include "vmm/boot/bios_state.h"
#include "vmm/boot/multiboot.h"
#include "vmm/core/status_macros.h"
#include "vmm/elf/elf_loader.h"
#include "vmm/machine/machine.h"
#include "vmm/machine/pc_host_check.h"
#include "vmm/vm_state.h"

namespace minivmm {
namespace {

// A status of the loader with the file it is about in front.
absl::Status About(const std::string& path, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrFormat("%s: %s", path, status.message()));
}

class PcMachine final : public Machine, public IrqLines {
 public:
  explicit PcMachine(const VmConfig& config)
      : fw_cfg_(FwCfgConfig{.cpus = static_cast<uint16_t>(config.cpus),
                            .ram_bytes = config.memory_bytes}) {
    if (config.pc_testdev) testdev_.emplace(this);
  }

  absl::Status Build(Vm::State& s, std::span<const uint8_t> image) override;
  absl::Status SetUpVcpu(Vm::State& s, KvmVcpu& vcpu, uint32_t cpu) override;
  bool own_interrupts() const override { return false; }
  std::vector<std::string> notes() const override;
  // A PC guest's console lines: kvm-unit-tests' `vmexit` prints one per
  // sub-test, ending it "\r\n"; the phase is named without the "\r".
  void EndPhasesWith(Vm::State& s, std::function<void(const std::string&)> end_phase) override {
    s.console.OnLine([end_phase = std::move(end_phase)](const std::string& line) {
      end_phase(line.ends_with('\r') ? line.substr(0, line.size() - 1) : line);
    });
  }

  // ISA IRQ `irq` as GSI `irq` (RouteIsaIrqsAsPc), for pc-testdev.
  void SetLevel(uint32_t irq, bool high) override;

 private:
  KvmVm* vm_ = nullptr;
  FwCfg fw_cfg_;
  PmTimer pm_timer_;
  std::optional<PcTestdev> testdev_;
  uint64_t irq_line_failures_ = 0;
  uint32_t entry_ = 0;
  uint32_t info_gpa_ = 0;
  bool tsc_deadline_timer_ = false;
  std::vector<std::string> cpu_not_given_;  // CPUID bits asked for, left clear
};

absl::Status PcMachine::Build(Vm::State& s, std::span<const uint8_t> image) {
  const VmConfig& config = s.config;
  // Whether this KVM delivers an exception in protected mode at all (a
  // throwaway VM of its own; pc_host_check.h), before anything of this one.
  RETURN_IF_ERROR(CheckPcMachineRunsHere(s.kvm));
  // The interrupt controllers first: KVM gives each vCPU created after them
  // a local APIC, and holds every vCPU but 0 in reset until INIT/SIPI.
  if (absl::Status irqchip = s.vm.CreateIrqchip(); !irqchip.ok())
    return absl::Status(irqchip.code(),
                        absl::StrFormat("the pc machine cannot run here: %s", irqchip.message()));
  vm_ = &s.vm;
  RETURN_IF_ERROR(s.vm.RouteIsaIrqsAsPc());
  if (config.pit) {
    if (absl::Status pit = s.vm.CreatePit(); !pit.ok())
      return absl::Status(pit.code(), absl::StrFormat("no PIT here: %s", pit.message()));
  }
  tsc_deadline_timer_ = s.vm.HasTscDeadlineTimer();
  if (config.hyperv) {
    if (absl::Status hv = s.kvm.NeedHyperv(); !hv.ok())
      return absl::Status(hv.code(), absl::StrFormat("no Hyper-V enlightenments here: %s",
                                                     hv.message()));
  }

  const GuestMemory& memory = s.memory;
  // What firmware would have left (bios_state.h), before the image, which
  // may load over the vector table as over a BIOS's.
  RETURN_IF_ERROR(SetBiosState(s.vm, memory, config.pit));
  absl::StatusOr<MultibootImage> loaded = LoadMultiboot(image, memory);
  if (!loaded.ok()) return About(config.kernel_path, loaded.status());
  entry_ = loaded->entry;

  std::vector<uint8_t> initrd;
  MultibootInfoRequest info;
  // As QEMU's -kernel and -append: the guest takes argv[0] from it.
  info.cmdline = absl::StrFormat("%s %s", config.kernel_path, config.cmdline);
  // Modules above 1 MiB even after an image in low RAM; the information
  // after such an image.
  info.after_gpa = std::max(loaded->end_gpa, kMultibootMinLoadGpa);
  info.low_image_end = loaded->low_end_gpa;
  if (!config.initrd_path.empty()) {
    ASSIGN_OR_RETURN(initrd, ReadFile(config.initrd_path));
    info.modules.push_back({initrd, config.initrd_path});
  }
  absl::StatusOr<uint32_t> info_gpa = WriteMultibootInfo(info, memory);
  if (!info_gpa.ok()) return About(config.kernel_path, info_gpa.status());
  info_gpa_ = *info_gpa;

  RETURN_IF_ERROR(WriteAcpiTables({.cpus = config.cpus,
                                   .ioapic_address = kPcIoapicGpa,
                                   .ioapic_id = kPcIoapicId,
                                   .local_apic_address = kPcLocalApicGpa,
                                   .pm_timer_port = kPcPmTimerPort},
                                  memory)
                      .status());

  RETURN_IF_ERROR(s.pio_bus.Register(MVMM_COM1_PORT, 8, &s.uart).status());
  RETURN_IF_ERROR(
      s.pio_bus.Register(MVMM_DEBUG_EXIT_PORT, DebugExit::kIoSize, &s.debug_exit).status());
  RETURN_IF_ERROR(s.pio_bus.Register(FwCfg::kPortBase, FwCfg::kIoSize, &fw_cfg_).status());
  RETURN_IF_ERROR(s.pio_bus.Register(kPcPmTimerPort, PmTimer::kIoSize, &pm_timer_).status());
  if (testdev_) {
    RETURN_IF_ERROR(
        s.pio_bus.Register(PcTestdevPorts::kPortBase, PcTestdevPorts::kIoSize, &testdev_->ports)
            .status());
    RETURN_IF_ERROR(
        s.pio_bus.Register(PcTestdevIrq::kPortBase, PcTestdevIrq::kIoSize, &testdev_->irq)
            .status());
    RETURN_IF_ERROR(
        s.mmio_bus.Register(PcTestdevIomem::kMmioBase, PcTestdevIomem::kIoSize, &testdev_->iomem)
            .status());
  }
  return absl::OkStatus();
}

void PcMachine::SetLevel(uint32_t irq, bool high) {
  if (!vm_->SetIrqLine(irq, high).ok()) ++irq_line_failures_;
}

std::vector<std::string> PcMachine::notes() const {
  std::vector<std::string> notes;
  for (const std::string& line : cpu_not_given_) notes.push_back("warning: " + line);
  if (irq_line_failures_ != 0)
    notes.push_back(absl::StrFormat("KVM_IRQ_LINE failed %u times (pc-testdev's IRQ lines)",
                                    irq_line_failures_));
  return notes;
}

absl::Status PcMachine::SetUpVcpu(Vm::State& s, KvmVcpu& vcpu, uint32_t cpu) {
  // What vCPU 0 could not be given, said once (every vCPU's CPUID is alike).
  RETURN_IF_ERROR(vcpu.SetCpuid(s.kvm.fd(),
                                CpuidMachine{.apic_id = cpu,
                                             .local_apic_in_kernel = true,
                                             .tsc_deadline_timer = tsc_deadline_timer_,
                                             .features = s.config.cpu_features,
                                             .vendor = s.config.cpu_vendor,
                                             .enforce = s.config.cpu_enforce,
                                             .hyperv = s.config.hyperv},
                                cpu == 0 ? &cpu_not_given_ : nullptr));
  // The others stay as KVM made them: in reset, waiting for INIT/SIPI.
  if (cpu != 0) return absl::OkStatus();
  return vcpu.SetProtectedModeBoot({.eip = entry_, .eax = kMultibootBootMagic, .ebx = info_gpa_});
}

}  // namespace

absl::StatusOr<std::unique_ptr<Machine>> MakePcMachine(VmConfig& config) {
  if (config.kernel_path.empty())
    return absl::InvalidArgumentError(
        "the pc machine needs a kernel: a Multiboot-1 image (e.g. a kvm-unit-tests x86/*.flat)");
  if (config.timer_hz != 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "a timer rate (%u Hz) is the builtin machine's: on the pc machine the guest programs its "
        "own local APIC timers or PIT",
        config.timer_hz));
  if (config.cpus > kAcpiMaxCpus)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%u vCPUs: the pc machine's MADT holds at most %u", config.cpus, kAcpiMaxCpus));
  return std::make_unique<PcMachine>(config);
}

}  // namespace minivmm
