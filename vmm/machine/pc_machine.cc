// The PC machine (docs/machines.md), `pc` and `q35` alike: a Multiboot-1
// image entered on vCPU 0 in 32-bit protected mode, the other vCPUs in reset
// state until the guest starts them with INIT/SIPI through their local APICs
// in KVM; the Multiboot information, ACPI tables, fw_cfg, the ACPI PM timer,
// PM1, the RTC, COM1 and the debug-exit port. The interrupt controllers and
// whatever else tells the two apart are the chipset's (pc_chipset.h). No
// hypercall port and no GDT trap: an access to their addresses is an
// unclaimed one.
#include "vmm/machine/pc_machine.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "devices/acpi_pm1.h"
#include "devices/fw_cfg.h"
#include "devices/host_pages.h"
#include "devices/hyperv_synic.h"
#include "devices/hyperv_testdev.h"
#include "devices/pc_testdev.h"
#include "devices/pm_timer.h"
#include "devices/rtc_cmos.h"
#include "minivmm_abi/boot.h"
#include "vmm/boot/acpi_tables.h"
#include "vmm/boot/bios_state.h"
#include "vmm/boot/multiboot.h"
#include "vmm/core/status_macros.h"
#include "vmm/elf/elf_loader.h"
#include "vmm/kvm/sint_routes.h"
#include "vmm/machine/cpuid_probe.h"
#include "vmm/machine/machine.h"
#include "vmm/machine/pc_chipset.h"
#include "vmm/machine/pc_host_check.h"
#include "vmm/vm_state.h"

namespace minivmm {
namespace {

// A status of the loader with the file it is about in front.
absl::Status About(const std::string& path, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrFormat("%s: %s", path, status.message()));
}

// The CMOS bytes a PC's firmware reads, as QEMU's pc_cmos_init sets them:
// base memory 640 KiB (0x15-0x16), the KiB above 1 MiB up to 65535 (0x17-0x18
// and again 0x30-0x31), the 64 KiB units above 16 MiB below 4 GiB up to
// 0xFFFF (0x34-0x35), those above 4 GiB (0x5B-0x5D: none, RAM ends below
// 3 GiB), and the CPUs less one (0x5F).
std::array<uint8_t, RtcCmos::kBytes> PcCmosRam(const VmConfig& config) {
  std::array<uint8_t, RtcCmos::kBytes> ram{};
  auto put16 = [&ram](size_t at, uint64_t value) {
    ram[at] = static_cast<uint8_t>(value);
    ram[at + 1] = static_cast<uint8_t>(value >> 8);
  };
  constexpr uint64_t kKiB = 1024, kMiB = 1024 * kKiB;
  put16(0x15, 640);
  const uint64_t above_1m = config.memory_bytes > kMiB ? (config.memory_bytes - kMiB) / kKiB : 0;
  put16(0x17, std::min<uint64_t>(above_1m, 0xFFFF));
  put16(0x30, std::min<uint64_t>(above_1m, 0xFFFF));
  const uint64_t above_16m =
      config.memory_bytes > 16 * kMiB ? (config.memory_bytes - 16 * kMiB) / (64 * kKiB) : 0;
  put16(0x34, std::min<uint64_t>(above_16m, 0xFFFF));
  ram[0x5F] = static_cast<uint8_t>(config.cpus - 1);
  return ram;
}

class PcMachine final : public Machine, public HostPages, public AcpiSleeper {
 public:
  explicit PcMachine(const VmConfig& config)
      : fw_cfg_(FwCfgConfig{.cpus = static_cast<uint16_t>(config.cpus),
                            .ram_bytes = config.memory_bytes}),
        rtc_(RtcCmos::Config{.wall_seconds = RtcCmos::WallSeconds(), .ram = PcCmosRam(config)}),
        pm1_(this),
        chipset_(MakePcChipset(config)) {
    if (config.pc_testdev) testdev_.emplace(chipset_.get(), this);
  }

  absl::Status Build(Vm::State& s, std::span<const uint8_t> image) override;
  absl::Status SetUpVcpu(Vm::State& s, KvmVcpu& vcpu, uint32_t cpu) override;
  // The acknowledgement thread calls into synic_: it ends first.
  ~PcMachine() override {
    if (sint_routes_) sint_routes_->Stop();
  }

  bool own_interrupts() const override { return false; }
  HypervHost* hyperv_host() override { return synic_ ? &*synic_ : nullptr; }
  IoapicEoiSink* ioapic_eoi() override { return chipset_->ioapic_eoi(); }
  std::vector<std::string> notes() const override;
  // A PC guest's console lines: kvm-unit-tests' `vmexit` prints one per
  // sub-test, ending it "\r\n"; the phase is named without the "\r".
  void EndPhasesWith(Vm::State& s, std::function<void(const std::string&)> end_phase) override {
    s.console.OnLine([end_phase = std::move(end_phase)](const std::string& line) {
      end_phase(line.ends_with('\r') ? line.substr(0, line.size() - 1) : line);
    });
  }

  // pc-testdev's flush-page port: the host's mapping of the RAM page made
  // to drop its entries (MappedMemory::InvalidateHostPage), with the SynIC's
  // writes to guest memory held back meanwhile; a page outside RAM is
  // ignored and counted (QEMU's mprotect then lands on a bounce buffer).
  void FlushHostPage(uint64_t gpa) override;
  // A PM1_CNT write with SLP_EN: S5 powers off (the run ends with status 0,
  // as QEMU exits); S3 suspends the vCPU until the RTC's alarm where PM1_EN
  // enables it as a wake event, then Resume; any other SLP_TYP names no
  // state the DSDT offers and is ignored, said in the notes.
  void Sleep(uint8_t slp_typ, ExitContext& ctx) override;

 private:
  // The firmware's resume path from S3, on vCPU `cpu`'s thread: the RTC's
  // alarm and PM1's WAK_STS and RTC_STS set, the PICs as a BIOS sets them up,
  // and the vCPU in real mode at the FACS's waking vector. The guest's
  // vector is untrusted: 0 or beyond 1 MiB stops the run, saying so.
  absl::Status Resume(uint32_t cpu);

  KvmVm* vm_ = nullptr;
  const GuestMemory* memory_ = nullptr;
  const MappedMemory* ram_ = nullptr;
  uint64_t flushes_outside_ram_ = 0;
  uint64_t flush_failures_ = 0;
  std::vector<KvmVcpu*> vcpus_;
  FwCfg fw_cfg_;
  PmTimer pm_timer_;
  RtcCmos rtc_;
  AcpiPm1 pm1_;
  uint64_t sleeps_ignored_ = 0;
  std::unique_ptr<PcChipset> chipset_;  // pc-testdev's IrqLines
  std::optional<PcTestdev> testdev_;
  // With hyperv_testdev: the SINT routes, the VMM's side of SynIC and the
  // device (with hyperv alone, KVM's SynIC needs nothing of the VMM).
  std::unique_ptr<KvmSintRoutes> sint_routes_;
  std::optional<HypervSynic> synic_;
  std::optional<HypervTestdev> hyperv_testdev_;
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
  // The interrupt controllers first (the chipset's): KVM gives each vCPU
  // created after them a local APIC, and holds every vCPU but 0 in reset
  // until INIT/SIPI.
  RETURN_IF_ERROR(chipset_->Build(s));
  vm_ = &s.vm;
  tsc_deadline_timer_ = s.vm.HasTscDeadlineTimer();
  if (config.hyperv) {
    if (absl::Status hv = s.kvm.NeedHyperv(); !hv.ok())
      return absl::Status(hv.code(), absl::StrFormat("no Hyper-V enlightenments here: %s",
                                                     hv.message()));
  }
  if (config.hyperv_testdev) {
    ASSIGN_OR_RETURN(sint_routes_, KvmSintRoutes::Create(s.vm));
    synic_.emplace(s.memory, *sint_routes_, config.cpus, sint_routes_->event_connections());
    hyperv_testdev_.emplace(&*synic_, sint_routes_.get());
  }

  const GuestMemory& memory = s.memory;
  memory_ = &memory;
  ram_ = &s.ram;
  // What firmware would have left (bios_state.h), before the image, which
  // may load over the vector table as over a BIOS's.
  RETURN_IF_ERROR(WriteBiosInterruptVectors(memory));
  RETURN_IF_ERROR(chipset_->SetBiosState(/*at_boot=*/true));
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

  AcpiMachine acpi{.cpus = config.cpus,
                   .ioapic_address = kPcIoapicGpa,
                   .ioapic_id = kPcIoapicId,
                   .local_apic_address = kPcLocalApicGpa,
                   .pm_timer_port = kPcPmTimerPort,
                   .pm1_event_port = kPcPm1EventPort,
                   .pm1_control_port = kPcPm1ControlPort};
  chipset_->DescribeIn(acpi);
  RETURN_IF_ERROR(WriteAcpiTables(acpi, memory).status());

  RETURN_IF_ERROR(s.pio_bus.Register(MVMM_COM1_PORT, 8, &s.uart).status());
  RETURN_IF_ERROR(
      s.pio_bus.Register(MVMM_DEBUG_EXIT_PORT, DebugExit::kIoSize, &s.debug_exit).status());
  RETURN_IF_ERROR(s.pio_bus.Register(FwCfg::kPortBase, FwCfg::kIoSize, &fw_cfg_).status());
  RETURN_IF_ERROR(s.pio_bus.Register(kPcPmTimerPort, PmTimer::kIoSize, &pm_timer_).status());
  RETURN_IF_ERROR(
      s.pio_bus.Register(kPcPm1EventPort, AcpiPm1Events::kIoSize, &pm1_.events).status());
  RETURN_IF_ERROR(
      s.pio_bus.Register(kPcPm1ControlPort, AcpiPm1Control::kIoSize, &pm1_.control).status());
  RETURN_IF_ERROR(s.pio_bus.Register(RtcCmos::kPortBase, RtcCmos::kIoSize, &rtc_).status());
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
  if (hyperv_testdev_) {
    RETURN_IF_ERROR(
        s.pio_bus.Register(HypervTestdev::kPortBase, HypervTestdev::kIoSize, &*hyperv_testdev_)
            .status());
  }
  return absl::OkStatus();
}

void PcMachine::FlushHostPage(uint64_t gpa) {
  constexpr uint64_t kPage = 4096;
  if (!memory_->Contains(GuestAddress(gpa), kPage)) {
    ++flushes_outside_ram_;
    return;
  }
  std::unique_lock<std::mutex> hold;
  if (synic_) hold = synic_->HoldGuestWrites();
  if (!ram_->InvalidateHostPage(gpa).ok()) ++flush_failures_;
}

void PcMachine::Sleep(uint8_t slp_typ, ExitContext& ctx) {
  if (slp_typ == kAcpiSleepTypeS5) {
    ctx.control.Shutdown(0);
    return;
  }
  if (slp_typ != kAcpiSleepTypeS3) {
    ++sleeps_ignored_;
    return;
  }
  std::optional<uint64_t> wake_at;
  if (pm1_.rtc_wake_enabled()) wake_at = rtc_.NextAlarmNs();
  const uint32_t cpu = ctx.vcpu_id;
  ctx.control.Suspend(wake_at, [this, cpu] { return Resume(cpu); });
}

absl::Status PcMachine::Resume(uint32_t cpu) {
  rtc_.RaiseAlarm();
  pm1_.Wake(/*by_rtc=*/true);
  const std::optional<uint32_t> vector =
      memory_->ReadObj<uint32_t>(GuestAddress(kAcpiFacsGpa + kAcpiFacsWakingVectorOffset));
  if (!vector || *vector == 0)
    return absl::FailedPreconditionError(
        "the guest woke from ACPI S3 with no waking vector in the FACS");
  constexpr uint32_t kRealModeEnd = 0x100000;
  if (*vector >= kRealModeEnd)
    return absl::FailedPreconditionError(absl::StrFormat(
        "the guest woke from ACPI S3 with the FACS's waking vector 0x%x, beyond real mode's 1 MiB",
        *vector));
  if (cpu >= vcpus_.size() || vcpus_[cpu] == nullptr)
    return absl::InternalError(absl::StrFormat("no vCPU %u to resume", cpu));
  RETURN_IF_ERROR(chipset_->SetBiosState(/*at_boot=*/false));
  return vcpus_[cpu]->EnterRealMode(static_cast<uint16_t>(*vector >> 4),
                                    static_cast<uint16_t>(*vector & 0xF));
}

std::vector<std::string> PcMachine::notes() const {
  std::vector<std::string> notes;
  if (sleeps_ignored_ != 0)
    notes.push_back(absl::StrFormat(
        "the guest asked for a sleeping state the DSDT does not name %u times (PM1_CNT.SLP_TYP "
        "other than S3's %u and S5's %u); ignored",
        sleeps_ignored_, kAcpiSleepTypeS3, kAcpiSleepTypeS5));
  for (const std::string& line : cpu_not_given_) notes.push_back("warning: " + line);
  if (hyperv_testdev_ && hyperv_testdev_->refused() != 0)
    notes.push_back(absl::StrFormat("hyperv-testdev refused %u requests; the first: %s",
                                    hyperv_testdev_->refused(), hyperv_testdev_->first_refusal()));
  if (hyperv_testdev_ && hyperv_testdev_->ignored_writes() != 0)
    notes.push_back(absl::StrFormat(
        "hyperv-testdev ignored %u writes that were not one 4-byte write at port 0x3000",
        hyperv_testdev_->ignored_writes()));
  if (synic_ && synic_->dropped_messages() != 0)
    notes.push_back(
        absl::StrFormat("%u Hyper-V messages were dropped: their vCPU had no SynIC message page",
                        synic_->dropped_messages()));
  if (synic_ && synic_->dropped_events() != 0)
    notes.push_back(absl::StrFormat(
        "%u Hyper-V events were dropped: their vCPU had no SynIC event flags page enabled",
        synic_->dropped_events()));
  if (flushes_outside_ram_ != 0)
    notes.push_back(absl::StrFormat(
        "pc-testdev was asked to flush %u pages outside RAM; nothing to flush there",
        flushes_outside_ram_));
  if (flush_failures_ != 0)
    notes.push_back(
        absl::StrFormat("mprotect failed for %u of pc-testdev's page flushes", flush_failures_));
  for (std::string& line : chipset_->notes()) notes.push_back(std::move(line));
  return notes;
}

absl::Status PcMachine::SetUpVcpu(Vm::State& s, KvmVcpu& vcpu, uint32_t cpu) {
  if (vcpus_.size() <= cpu) vcpus_.resize(cpu + 1, nullptr);
  vcpus_[cpu] = &vcpu;
  // What vCPU 0 could not be given, or would see otherwise than asked
  // (cpuid_probe.h), said once (every vCPU's CPUID is alike).
  const CpuidMachine cpuid{.apic_id = cpu,
                           .local_apic_in_kernel = true,
                           .tsc_deadline_timer = tsc_deadline_timer_,
                           .features = s.config.cpu_features,
                           .vendor = s.config.cpu_vendor,
                           .enforce = s.config.cpu_enforce,
                           .hyperv = s.config.hyperv};
  RETURN_IF_ERROR(vcpu.SetCpuid(s.kvm.fd(), cpuid, cpu == 0 ? &cpu_not_given_ : nullptr));
  // The others stay as KVM made them: in reset, waiting for INIT/SIPI.
  if (cpu != 0) return absl::OkStatus();
  RETURN_IF_ERROR(CheckCpuFeaturesAsSeen(s.kvm, cpuid, &cpu_not_given_));
  return vcpu.SetProtectedModeBoot({.eip = entry_, .eax = kMultibootBootMagic, .ebx = info_gpa_});
}

}  // namespace

absl::StatusOr<std::unique_ptr<Machine>> MakePcMachine(VmConfig& config) {
  if (config.kernel_path.empty())
    return absl::InvalidArgumentError(
        absl::StrFormat("the %s machine needs a kernel: a Multiboot-1 image (e.g. a "
                        "kvm-unit-tests x86/*.flat)",
                        MachineName(config.machine)));
  if (config.timer_hz != 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "a timer rate (%u Hz) is the builtin machine's: on the pc machine the guest programs its "
        "own local APIC timers or PIT",
        config.timer_hz));
  RETURN_IF_ERROR(CheckPcChipsetConfig(config));
  if (config.hyperv_testdev && !config.hyperv)
    return absl::InvalidArgumentError(
        "hyperv-testdev needs Hyper-V's enlightenments (hyperv, --hyperv): its SINTs are SynIC's");
  if (config.cpus > kAcpiMaxCpus)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%u vCPUs: the pc machine's MADT holds at most %u", config.cpus, kAcpiMaxCpus));
  return std::make_unique<PcMachine>(config);
}

}  // namespace minivmm
