#include "vmm/kvm/kick.h"

#include <linux/kvm.h>
#include <signal.h>
#include <sys/ioctl.h>

#include <cstring>
#include <vector>

#include "vmm/kvm/flex_ioctls.h"
#include "vmm/kvm/kvm_error.h"

namespace minivmm {

int KickSignal() { return SIGRTMIN + 1; }

absl::Status PrepareKickSignal(int vcpu_fd) {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, KickSignal());
  if (int err = pthread_sigmask(SIG_BLOCK, &block, nullptr); err != 0)
    return KvmError("pthread_sigmask", err);
  sigset_t during_run;
  pthread_sigmask(SIG_BLOCK, nullptr, &during_run);
  sigdelset(&during_run, KickSignal());
  // KVM takes the kernel's 8-byte sigset, not glibc's 128-byte sigset_t;
  // kvm_signal_mask is laid out by hand (see flex_ioctls.h).
  uint8_t buffer[kKvmSignalMaskHeaderBytes + 8];
  uint32_t len = 8;
  std::memcpy(buffer, &len, sizeof(len));
  std::memcpy(buffer + kKvmSignalMaskHeaderBytes, &during_run, 8);
  if (ioctl(vcpu_fd, kKvmSetSignalMask, buffer) < 0) return KvmError("KVM_SET_SIGNAL_MASK");
  return absl::OkStatus();
}

void SendKickSignal(pthread_t thread) { pthread_kill(thread, KickSignal()); }

void DrainKickSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, KickSignal());
  timespec zero{};
  while (sigtimedwait(&set, nullptr, &zero) > 0) {
  }
}

}  // namespace minivmm
