/* The floor for whole-process start-up (VMM benchmark 3b, docs/RESULTS.md):
 * the least a program must do to run a guest to its first exit, in plain C
 * with nothing but libc. It opens /dev/kvm, creates a VM, maps guest RAM of
 * minivmm's default size (VmConfig::memory_bytes, 64 MiB; startup_bench
 * passes it as the argument) with minivmm's mmap flags, copies a
 * two-instruction blob, `out 0xf4, al; hlt`, to 0x1000, creates one vCPU,
 * points it at the blob (the vCPU starts in real mode: CS base 0, RIP
 * 0x1000) and runs it until its first exit, the `out`. Nothing more: no
 * CPUID, no page tables, no 64-bit mode, which minivmm's guests need and this
 * blob does not, so that this is a floor and not a rival VMM.
 *
 * Exit status 0 when the first exit is the `out`, 1 for any other exit, 2
 * when a step fails. startup_bench times it as a whole process (spawn to
 * wait); its guest runs one instruction, so all of its time counts as
 * outside the guest. Self-contained on purpose: no minivmm code or headers. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#define DEFAULT_RAM_BYTES (64ull << 20) /* minivmm's VmConfig::memory_bytes default */
#define CODE_GPA 0x1000u
#define EXIT_PORT 0xf4u

static void die(const char* what) {
  perror(what);
  exit(2);
}

int main(int argc, char** argv) {
  uint64_t ram_bytes = argc > 1 ? strtoull(argv[1], NULL, 0) : DEFAULT_RAM_BYTES;
  if (ram_bytes < 2 * CODE_GPA || ram_bytes % 4096 != 0) {
    fprintf(stderr, "usage: bare_first_exit [RAM_BYTES, a page multiple]\n");
    return 2;
  }
  int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
  if (kvm < 0) die("open /dev/kvm");
  int vm = ioctl(kvm, KVM_CREATE_VM, 0);
  if (vm < 0) die("KVM_CREATE_VM");

  uint8_t* ram = mmap(NULL, ram_bytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (ram == MAP_FAILED) die("mmap guest RAM");
  struct kvm_userspace_memory_region region = {
      .slot = 0, .guest_phys_addr = 0, .memory_size = ram_bytes,
      .userspace_addr = (uint64_t)(uintptr_t)ram};
  if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0) die("KVM_SET_USER_MEMORY_REGION");
  static const uint8_t blob[] = {0xe6, EXIT_PORT, 0xf4}; /* out 0xf4, al; hlt */
  memcpy(ram + CODE_GPA, blob, sizeof blob);

  int vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
  if (vcpu < 0) die("KVM_CREATE_VCPU");
  int run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
  if (run_size < 0) die("KVM_GET_VCPU_MMAP_SIZE");
  struct kvm_run* run = mmap(NULL, (size_t)run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
  if (run == MAP_FAILED) die("mmap kvm_run");

  struct kvm_sregs sregs;
  if (ioctl(vcpu, KVM_GET_SREGS, &sregs) < 0) die("KVM_GET_SREGS");
  sregs.cs.base = 0;
  sregs.cs.selector = 0;
  if (ioctl(vcpu, KVM_SET_SREGS, &sregs) < 0) die("KVM_SET_SREGS");
  struct kvm_regs regs;
  memset(&regs, 0, sizeof regs);
  regs.rip = CODE_GPA;
  regs.rflags = 2;
  if (ioctl(vcpu, KVM_SET_REGS, &regs) < 0) die("KVM_SET_REGS");

  if (ioctl(vcpu, KVM_RUN, 0) < 0) die("KVM_RUN");
  if (run->exit_reason != KVM_EXIT_IO || run->io.port != EXIT_PORT) {
    fprintf(stderr, "bare_first_exit: unexpected first exit %u\n", run->exit_reason);
    return 1;
  }
  return 0;
}
