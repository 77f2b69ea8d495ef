#include "minivmm/vm.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_format.h"
#include "minivmm_abi/boot.h"
#include "vmm/boot/boot_layout.h"
#include "vmm/core/status_macros.h"
#include "vmm/elf/elf_loader.h"
#include "vmm/machine/machine.h"
#include "vmm/vm_state.h"

#ifndef MINIVMM_BUILD_GUEST_ELF
#define MINIVMM_BUILD_GUEST_ELF ""
#endif
#ifndef MINIVMM_BUILD_DIR
#define MINIVMM_BUILD_DIR ""
#endif
#ifndef MINIVMM_INSTALLED_GUEST_ELF
#define MINIVMM_INSTALLED_GUEST_ELF ""
#endif

namespace minivmm {
namespace {

constexpr uint32_t kMaxTimerHz = 10000;

absl::Status ValidateConfig(const VmConfig& config) {
  if (config.memory_bytes < MVMM_MEMORY_MIN || config.memory_bytes > MVMM_MEMORY_MAX ||
      config.memory_bytes % kTwoMiB != 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "memory size %u bytes: must be a multiple of 2 MiB between %u MiB and %u MiB",
        config.memory_bytes, MVMM_MEMORY_MIN >> 20, MVMM_MEMORY_MAX >> 20));
  if (config.kernel_exit_events && !config.kernel_exits)
    return absl::InvalidArgumentError("kernel_exit_events needs kernel_exits");
  if (config.timer_hz > kMaxTimerHz)
    return absl::InvalidArgumentError(
        absl::StrFormat("timer rate %u Hz: at most %u", config.timer_hz, kMaxTimerHz));
  if (config.cmdline.size() > MVMM_CMDLINE_MAX)
    return absl::InvalidArgumentError(absl::StrFormat("guest command line is %u bytes: at most %u",
                                                      config.cmdline.size(), MVMM_CMDLINE_MAX));
  if (config.timeout <= absl::ZeroDuration())
    return absl::InvalidArgumentError("timeout must be positive");
  if (config.cpus < 1 || config.cpus > MVMM_MAX_CPUS)
    return absl::InvalidArgumentError(
        absl::StrFormat("%u vCPUs: must be between 1 and %u", config.cpus, MVMM_MAX_CPUS));
  if (config.recent_exits.value_or(0) > kMaxRecentExits)
    return absl::InvalidArgumentError(absl::StrFormat("%u recent exits: at most %u per vCPU",
                                                      *config.recent_exits, kMaxRecentExits));
  return absl::OkStatus();
}

}  // namespace

std::string DefaultGuestKernelPath() {
  // 1. Beside an installed binary: <prefix>/bin/x -> <prefix>/share/minivmm.
  // 2. A binary inside the build tree uses the build tree's guest.
  // 3. The prefix this library was configured to install into.
  // 4. The build tree's guest, if it is still there.
  // An embedding program installed elsewhere should pass the path its
  // package config gives (MINIVMM_GUEST_KERNEL_PATH, docs/API.md).
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto installed = exe.parent_path().parent_path() / "share/minivmm/minivmm-guest.elf";
    if (std::filesystem::exists(installed, ec)) return installed.string();
    std::string_view build_dir = MINIVMM_BUILD_DIR;
    if (!build_dir.empty() && exe.string().starts_with(std::string(build_dir) + "/") &&
        std::filesystem::exists(MINIVMM_BUILD_GUEST_ELF, ec))
      return MINIVMM_BUILD_GUEST_ELF;
  }
  if (std::filesystem::exists(MINIVMM_INSTALLED_GUEST_ELF, ec)) return MINIVMM_INSTALLED_GUEST_ELF;
  if (std::filesystem::exists(MINIVMM_BUILD_GUEST_ELF, ec)) return MINIVMM_BUILD_GUEST_ELF;
  return MINIVMM_INSTALLED_GUEST_ELF;
}

std::string UncountedGuestKernelPath(const std::string& counted_kernel) {
  return (std::filesystem::path(counted_kernel).parent_path() / "minivmm-guest-uncounted.elf")
      .string();
}

Vm::Vm(std::unique_ptr<State> state) : state_(std::move(state)) {}
Vm::~Vm() = default;

absl::StatusOr<std::unique_ptr<Vm>> Vm::Create(const VmConfig& config_in) {
  VmConfig config = config_in;
  RETURN_IF_ERROR(ValidateConfig(config));
  ASSIGN_OR_RETURN(std::unique_ptr<Machine> machine, MakeMachine(config));
  ASSIGN_OR_RETURN(std::vector<uint8_t> image, ReadFile(config.kernel_path));

  // Before KVM: a host where the exits cannot be read is refused first.
  std::unique_ptr<KvmExitTrace> kernel_exits;
  if (config.kernel_exits) {
    ASSIGN_OR_RETURN(kernel_exits, KvmExitTrace::Open(config.cpus, config.kernel_exit_events,
                                                      /*stacks=*/config.record_sites));
  }
  ASSIGN_OR_RETURN(KvmSystem kvm, KvmSystem::Open(config.kvm_device));
  RETURN_IF_ERROR(kvm.CheckRequiredCapabilities());
  ASSIGN_OR_RETURN(KvmVm kvm_vm, KvmVm::Create(kvm));
  ASSIGN_OR_RETURN(MappedMemory ram, MappedMemory::Create(config.memory_bytes));
  RETURN_IF_ERROR(kvm_vm.SetMemoryRegion(0, 0, ram.size(), ram.data(), false));

  auto state = std::make_unique<State>(config, std::move(ram), std::move(machine), std::move(kvm),
                                       std::move(kvm_vm));
  State& s = *state;
  if (kernel_exits != nullptr) {
    s.kernel_exits = std::move(kernel_exits);
    s.kernel_exits->SetRam(s.ram.span());
    s.machine->EndPhasesWith(
        s, [trace = s.kernel_exits.get()](const std::string& what) { trace->EndPhase(what); });
  }
  RETURN_IF_ERROR(s.machine->Build(s, image));
  for (uint32_t cpu = 0; cpu < config.cpus; ++cpu) {
    ASSIGN_OR_RETURN(std::unique_ptr<KvmVcpu> vcpu, s.vm.CreateVcpu(s.kvm, static_cast<int>(cpu)));
    RETURN_IF_ERROR(s.machine->SetUpVcpu(s, *vcpu, cpu));
    s.signals[cpu]->vcpu.store(vcpu.get(), std::memory_order_release);
    s.vcpus.push_back(std::move(vcpu));
  }
  return std::unique_ptr<Vm>(new Vm(std::move(state)));
}

absl::Status Vm::RegisterHypercall(uint32_t nr, std::string name, HypercallHandler handler) {
  return state_->dispatcher.Register(nr, std::move(name), std::move(handler));
}

absl::Status Vm::RegisterPioDevice(uint64_t base, uint64_t length, IoDevice* device) {
  if (device == nullptr) return absl::InvalidArgumentError("null device");
  if (base > 0xffff || length > 0x10000 - base)
    return absl::InvalidArgumentError("port range outside the 64 KiB port space");
  return state_->pio_bus.Register(base, length, device).status();
}

absl::Status Vm::RegisterMmioDevice(uint64_t base, uint64_t length, IoDevice* device) {
  if (device == nullptr) return absl::InvalidArgumentError("null device");
  if (base < state_->memory.size())
    return absl::InvalidArgumentError("MMIO range overlaps guest RAM");
  return state_->mmio_bus.Register(base, length, device).status();
}

void Vm::SetExitObserver(ExitObserver observer) { state_->observer = std::move(observer); }

void Vm::RequestStop() {
  for (const auto& s : state_->signals) s->RequestStop();
}

std::string_view StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kGuestShutdown:
      return "guest shutdown";
    case StopReason::kTripleFault:
      return "triple fault";
    case StopReason::kEmulationFailure:
      return "emulation failure";
    case StopReason::kHaltedForever:
      return "halted forever";
    case StopReason::kTimeout:
      return "timeout";
    case StopReason::kStopRequested:
      return "stop requested";
    case StopReason::kVmmError:
      return "VMM error";
  }
  return "?";
}

}  // namespace minivmm
