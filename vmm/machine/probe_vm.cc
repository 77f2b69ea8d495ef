#include "vmm/machine/probe_vm.h"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>

#include "absl/strings/str_format.h"
#include "vmm/core/status_macros.h"

namespace minivmm {

std::string DescribeExit(const VcpuExit& exit) {
  return std::visit(
      [](const auto& e) -> std::string {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, IoOut> || std::is_same_v<T, IoIn>) {
          return absl::StrFormat("a %d-byte %s port 0x%x", e.size,
                                 std::is_same_v<T, IoOut> ? "write to" : "read of", e.port);
        } else if constexpr (std::is_same_v<T, MmioRead> || std::is_same_v<T, MmioWrite>) {
          return absl::StrFormat("an MMIO access at 0x%x", e.address);
        } else if constexpr (std::is_same_v<T, Hlt>) {
          return "a HLT";
        } else if constexpr (std::is_same_v<T, Interrupted>) {
          return "no exit within the time limit";
        } else if constexpr (std::is_same_v<T, Shutdown>) {
          return "a triple fault (KVM_EXIT_SHUTDOWN)";
        } else if constexpr (std::is_same_v<T, InternalError>) {
          return absl::StrFormat("KVM_EXIT_INTERNAL_ERROR, suberror %u", e.suberror);
        } else if constexpr (std::is_same_v<T, FailEntry>) {
          return absl::StrFormat("KVM_EXIT_FAIL_ENTRY, reason 0x%x", e.hardware_reason);
        } else if constexpr (std::is_same_v<T, SystemEvent>) {
          return absl::StrFormat("KVM_EXIT_SYSTEM_EVENT, type %u", e.type);
        } else if constexpr (std::is_same_v<T, UnknownExit>) {
          return absl::StrFormat("KVM exit reason %u", e.kvm_reason);
        } else if constexpr (std::is_same_v<T, RunFailed>) {
          return absl::StrFormat("KVM_RUN failing: %s", std::strerror(e.error));
        } else {
          return std::string(ExitReasonName(T::kReason));
        }
      },
      exit);
}

absl::StatusOr<std::unique_ptr<ProbeVm>> ProbeVm::Create(const KvmSystem& kvm, bool irqchip) {
  ASSIGN_OR_RETURN(MappedMemory ram, MappedMemory::Create(kMemoryBytes));
  ASSIGN_OR_RETURN(KvmVm vm, KvmVm::Create(kvm));
  RETURN_IF_ERROR(vm.SetMemoryRegion(0, 0, ram.size(), ram.data(), /*read_only=*/false));
  if (irqchip) RETURN_IF_ERROR(vm.CreateIrqchip());
  std::unique_ptr<ProbeVm> probe(new ProbeVm(std::move(ram), std::move(vm)));
  ASSIGN_OR_RETURN(probe->vcpu_, probe->vm_.CreateVcpu(kvm, 0));
  return probe;
}

ProbeVm::~ProbeVm() {
  if (bound_) vcpu_->UnbindFromThread();
}

absl::Status ProbeVm::Start(uint32_t eip) {
  RETURN_IF_ERROR(vcpu_->SetProtectedModeBoot({.eip = eip}));
  RETURN_IF_ERROR(vcpu_->BindToCurrentThread());
  bound_ = true;
  return absl::OkStatus();
}

VcpuExit ProbeVm::Run(absl::Duration limit) {
  // The kick ends KVM_RUN with EINTR: Interrupted.
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, absl::ToChronoMilliseconds(limit), [&] { return done; })) vcpu_->Kick();
  });
  VcpuExit exit = vcpu_->Run();
  {
    std::lock_guard lock(mu);
    done = true;
  }
  cv.notify_one();
  watchdog.join();
  return exit;
}

}  // namespace minivmm
