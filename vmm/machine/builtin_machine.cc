// The built-in guest's machine (docs/design.md "Boot"): an ELF64 image entered
// in 64-bit mode on every vCPU, on the VMM's identity page tables and its
// read-only GDT page with a TSS per vCPU; boot_info and the command line; the
// hypercall port, COM1, the debug-exit port and the GDT trap. Interrupts are
// the VMM's own: no local APIC, its timer and IPIs injected by the run loop.
#include <string_view>

#include "absl/strings/str_format.h"
#include "devices/gdt_trap.h"
#include "hypercalls/hypercall_port.h"
#include "minivmm_abi/boot.h"
#include "vmm/boot/boot_layout.h"
#include "vmm/core/status_macros.h"
#include "vmm/elf/elf_loader.h"
#include "vmm/machine/cpuid_probe.h"
#include "vmm/machine/machine.h"
#include "vmm/memory/mapped_memory.h"
#include "vmm/vm_state.h"

namespace minivmm {
namespace {

class BuiltinMachine final : public Machine {
 public:
  absl::Status Build(Vm::State& s, std::span<const uint8_t> image) override;
  absl::Status SetUpVcpu(Vm::State& s, KvmVcpu& vcpu, uint32_t cpu) override;
  std::span<uint8_t> gdt() override { return gdt_page_->span(); }
  std::optional<VcpuIdentity> Identity(uint32_t cpu) const override { return BootIdentity(cpu); }
  bool own_interrupts() const override { return true; }
  // The built-in guest's reports: each record (a workload's results, its
  // configuration) ends a phase named by the record's first key's prefix.
  void EndPhasesWith(Vm::State& s, std::function<void(const std::string&)> end_phase) override {
    s.reports.on_record = [end_phase = std::move(end_phase)](std::string_view first_key) {
      end_phase(std::string(first_key.substr(0, first_key.find('.'))));
    };
  }
  std::vector<std::string> notes() const override {
    std::vector<std::string> notes;
    for (const std::string& line : cpu_not_given_) notes.push_back("warning: " + line);
    if (gdt_trap_) {
      for (const std::string& note : gdt_trap_->notes()) notes.push_back(note);
    }
    return notes;
  }

 private:
  // Mapped into the VM (memslot 1, read-only); Vm::State keeps the machine
  // until after the VM fd is closed.
  std::optional<MappedMemory> gdt_page_;
  std::optional<GdtTrap> gdt_trap_;
  std::vector<std::string> cpu_not_given_;  // CPUID bits asked for, left clear
  HypercallPort hypercall_port_;
  uint64_t entry_ = 0;
  uint64_t cr3_ = 0;
};

absl::Status BuiltinMachine::Build(Vm::State& s, std::span<const uint8_t> image) {
  const VmConfig& config = s.config;
  ASSIGN_OR_RETURN(MappedMemory page, MappedMemory::Create(4096));
  gdt_page_.emplace(std::move(page));
  RETURN_IF_ERROR(
      s.vm.SetMemoryRegion(1, MVMM_GDT_GPA, gdt_page_->size(), gdt_page_->data(), true));
  gdt_trap_.emplace(gdt_page_->span(), config.cpus);

  const GuestMemory& memory = s.memory;
  auto loaded = LoadElf(image, memory);
  if (!loaded.ok())
    return absl::Status(loaded.status().code(),
                        absl::StrFormat("%s: %s", config.kernel_path, loaded.status().message()));
  if (loaded->entry != loaded->entry_gpa)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: entry point 0x%x is not identity-mapped (physical 0x%x); the direct boot needs "
        "p_vaddr == p_paddr",
        config.kernel_path, loaded->entry, loaded->entry_gpa));
  entry_ = loaded->entry;
  WriteInitialGdt(gdt_page_->span(), config.cpus);
  ASSIGN_OR_RETURN(cr3_, WriteIdentityPageTables(memory));
  RETURN_IF_ERROR(WriteTss(memory, config.cpus));
  RETURN_IF_ERROR(
      WriteBootInfo(memory, {config.cmdline, loaded->end_gpa, config.timer_hz, config.cpus}));

  RETURN_IF_ERROR(s.pio_bus.Register(MVMM_HYPERCALL_PORT, 4, &hypercall_port_).status());
  RETURN_IF_ERROR(s.pio_bus.Register(MVMM_COM1_PORT, 8, &s.uart).status());
  RETURN_IF_ERROR(
      s.pio_bus.Register(MVMM_DEBUG_EXIT_PORT, DebugExit::kIoSize, &s.debug_exit).status());
  return s.mmio_bus.Register(MVMM_GDT_GPA, 4096, &*gdt_trap_).status();
}

// Every vCPU enters at the same point, told its number in RSI, with its own
// stack, GDT and TSS (minivmm_abi/boot.h).
absl::Status BuiltinMachine::SetUpVcpu(Vm::State& s, KvmVcpu& vcpu, uint32_t cpu) {
  // Its own APIC ID; no local APIC (docs/design.md "CPUID").
  // What vCPU 0 could not be given, or would see otherwise than asked
  // (cpuid_probe.h), said once (every vCPU's CPUID is alike).
  const CpuidMachine cpuid{.apic_id = cpu,
                           .features = s.config.cpu_features,
                           .vendor = s.config.cpu_vendor,
                           .enforce = s.config.cpu_enforce};
  RETURN_IF_ERROR(vcpu.SetCpuid(s.kvm.fd(), cpuid, cpu == 0 ? &cpu_not_given_ : nullptr));
  if (cpu == 0) RETURN_IF_ERROR(CheckCpuFeaturesAsSeen(s.kvm, cpuid, &cpu_not_given_));
  LongModeBoot boot;
  boot.rip = entry_;
  boot.rsp = MVMM_CPU_STACK_TOP(cpu);
  boot.rdi = MVMM_BOOT_INFO_GPA;
  boot.rsi = cpu;
  boot.cr3 = cr3_;
  // Its GDT and TSS, checked at every hypercall exit of a debug build.
  const VcpuIdentity identity = BootIdentity(cpu);
  boot.gdt_base = identity.gdt_base;
  boot.gdt_limit = MVMM_GDT_ENTRIES * 8 - 1;
  boot.tss_base = identity.tr_base;
  boot.tr_selector = identity.tr_selector;
  return vcpu.SetLongModeBoot(boot);
}

// A field that only the PC machine (or its q35 form) reads, set on this one.
absl::Status PcOnly(bool set, std::string_view field, std::string_view machine = "pc") {
  if (!set) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("%s is for the %s machine; the builtin machine has none", field, machine));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Machine>> MakeBuiltinMachine(VmConfig& config) {
  RETURN_IF_ERROR(PcOnly(!config.initrd_path.empty(), "an initrd (a Multiboot module)"));
  RETURN_IF_ERROR(PcOnly(config.pit, "a PIT"));
  RETURN_IF_ERROR(PcOnly(config.pc_testdev, "pc-testdev"));
  RETURN_IF_ERROR(PcOnly(config.hyperv, "Hyper-V's enlightenments"));
  RETURN_IF_ERROR(PcOnly(config.hyperv_testdev, "hyperv-testdev"));
  RETURN_IF_ERROR(PcOnly(config.split_irqchip, "the split irqchip", "q35"));
  RETURN_IF_ERROR(PcOnly(config.intel_iommu, "an Intel IOMMU", "q35"));
  RETURN_IF_ERROR(PcOnly(config.edu, "the edu device", "q35"));
  if (config.kernel_path.empty()) config.kernel_path = DefaultGuestKernelPath();
  return std::make_unique<BuiltinMachine>();
}

absl::StatusOr<std::unique_ptr<Machine>> MakeMachine(VmConfig& config) {
  switch (config.machine) {
    case MachineKind::kBuiltin:
      return MakeBuiltinMachine(config);
    case MachineKind::kPc:
    case MachineKind::kQ35:
      return MakePcMachine(config);
  }
  return absl::InvalidArgumentError("unknown machine kind");
}

}  // namespace minivmm
