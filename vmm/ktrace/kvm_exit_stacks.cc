#include "vmm/ktrace/kvm_exit_stacks.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "vmm/ktrace/kvm_exit_stack.skel.h"

namespace minivmm {
namespace {

// libbpf's messages while loading, kept rather than printed: the last
// warning is what a refusal says. libbpf's printer is process-wide.
std::mutex libbpf_mu;
std::string libbpf_last;

int KeepLibbpfWarning(enum libbpf_print_level level, const char* format, va_list args) {
  if (level != LIBBPF_WARN) return 0;
  char line[512];
  std::vsnprintf(line, sizeof line, format, args);
  absl::string_view text = absl::StripTrailingAsciiWhitespace(line);
  if (!text.empty()) libbpf_last = std::string(absl::StripPrefix(text, "libbpf: "));
  return 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<KvmExitStacks>> KvmExitStacks::Open() {
  std::error_code ec;
  if (!std::filesystem::exists("/sys/module/kvm_amd", ec))
    return absl::FailedPreconditionError(
        "the guest's RIP, CPL and CS at an exit are in kvm_amd's VMCB only (on kvm_intel "
        "they are in the VMCS, which a BPF program cannot read)");
  // kvm_amd's types are in its module's BTF, or in the kernel's where it is
  // built in; libbpf names a type it cannot find.
  if (!std::filesystem::exists("/sys/kernel/btf/vmlinux", ec))
    return absl::FailedPreconditionError(
        "this kernel has no BTF (/sys/kernel/btf/vmlinux), which the BPF program needs to find "
        "KVM's structures");
  std::lock_guard lock(libbpf_mu);
  libbpf_last.clear();
  const libbpf_print_fn_t before = libbpf_set_print(KeepLibbpfWarning);
  kvm_exit_stack* skeleton = kvm_exit_stack::open_and_load();
  int error = skeleton == nullptr ? errno : 0;
  if (skeleton != nullptr && kvm_exit_stack::attach(skeleton) != 0) {
    error = errno;
    kvm_exit_stack::destroy(skeleton);
    skeleton = nullptr;
  }
  libbpf_set_print(before);
  if (skeleton == nullptr)
    return absl::FailedPreconditionError(absl::StrFormat(
        "the BPF program on kvm_exit did not load (%s%s%s; as root or with CAP_BPF and "
        "CAP_PERFMON)",
        std::strerror(error), libbpf_last.empty() ? "" : ": ", libbpf_last));
  auto stacks = std::unique_ptr<KvmExitStacks>(new KvmExitStacks(skeleton));
  stacks->ring_ = ring_buffer__new(
      bpf_map__fd(skeleton->maps.stacks),
      [](void* self, void* data, size_t size) {
        if (size >= sizeof(minivmm_exit_stack)) {
          auto& me = *static_cast<KvmExitStacks*>(self);
          (*me.take_)(*static_cast<const minivmm_exit_stack*>(data));
        }
        return 0;
      },
      stacks.get(), nullptr);
  if (stacks->ring_ == nullptr)
    return absl::FailedPreconditionError(
        absl::StrFormat("the BPF program's ring could not be read (%s)", std::strerror(errno)));
  return stacks;
}

KvmExitStacks::~KvmExitStacks() {
  ring_buffer__free(ring_);
  kvm_exit_stack::destroy(skeleton_);
}

void KvmExitStacks::SetRam(std::span<const uint8_t> ram) {
  skeleton_->bss->ram_hva = reinterpret_cast<uintptr_t>(ram.data());
  skeleton_->bss->ram_size = ram.size();
}

absl::Status KvmExitStacks::AddThread(pid_t tid) {
  const uint32_t key = static_cast<uint32_t>(tid), value = 0;
  if (bpf_map__update_elem(skeleton_->maps.threads, &key, sizeof key, &value, sizeof value,
                           BPF_ANY) != 0)
    return absl::InternalError(
        absl::StrFormat("the BPF program's thread map: %s", std::strerror(errno)));
  return absl::OkStatus();
}

void KvmExitStacks::Consume(const std::function<void(const minivmm_exit_stack&)>& take) {
  take_ = &take;
  ring_buffer__consume(ring_);
  take_ = nullptr;
}

}  // namespace minivmm
