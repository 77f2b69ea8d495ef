#include "bench/bare_kvm_loop.h"

#include <fcntl.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <chrono>
#include <vector>

#include "absl/strings/str_format.h"
#include "minivmm_abi/boot.h"
#include "vmm/boot/boot_layout.h"
#include "vmm/elf/elf_loader.h"
#include "vmm/kvm/fd.h"
#include "vmm/kvm/flex_ioctls.h"
#include "vmm/memory/mapped_memory.h"

namespace minivmm::bench {
namespace {

absl::Status Errno(const char* what) {
  return absl::InternalError(absl::StrFormat("%s: %s", what, strerror(errno)));
}

kvm_segment Flat(uint16_t selector, uint8_t type, bool code) {
  kvm_segment s{};
  s.limit = 0xffffffff;
  s.selector = selector;
  s.type = type;
  s.present = 1;
  s.s = 1;
  s.l = code;
  s.db = !code;
  s.g = 1;
  return s;
}

}  // namespace

absl::StatusOr<BareRun> RunBareLoop(const std::string& kernel) {
  auto image = ReadFile(kernel);
  if (!image.ok()) return image.status();
  Fd kvm(open("/dev/kvm", O_RDWR | O_CLOEXEC));
  if (!kvm.valid()) return Errno("open /dev/kvm");
  Fd vm(ioctl(kvm.get(), KVM_CREATE_VM, 0));
  if (!vm.valid()) return Errno("KVM_CREATE_VM");
  ioctl(vm.get(), KVM_SET_TSS_ADDR, 0xfffbd000ul);
  auto ram = MappedMemory::Create(64ull << 20);
  auto gdt = MappedMemory::Create(4096);
  if (!ram.ok() || !gdt.ok()) return absl::ResourceExhaustedError("mmap");
  kvm_userspace_memory_region r0{0, 0, 0, ram->size(), reinterpret_cast<uint64_t>(ram->data())};
  kvm_userspace_memory_region r1{1, KVM_MEM_READONLY, MVMM_GDT_GPA, 4096,
                                 reinterpret_cast<uint64_t>(gdt->data())};
  if (ioctl(vm.get(), KVM_SET_USER_MEMORY_REGION, &r0) < 0 ||
      ioctl(vm.get(), KVM_SET_USER_MEMORY_REGION, &r1) < 0)
    return Errno("KVM_SET_USER_MEMORY_REGION");
  GuestMemory memory(ram->span());
  auto loaded = LoadElf(*image, memory);
  if (!loaded.ok()) return loaded.status();
  WriteInitialGdt(gdt->span(), 1);
  auto cr3 = WriteIdentityPageTables(memory);
  if (!cr3.ok()) return cr3.status();
  if (auto s = WriteTss(memory); !s.ok()) return s;
  if (auto s = WriteBootInfo(memory, {"", loaded->end_gpa, 0}); !s.ok()) return s;

  Fd vcpu(ioctl(vm.get(), KVM_CREATE_VCPU, 0));
  if (!vcpu.valid()) return Errno("KVM_CREATE_VCPU");
  int run_size = ioctl(kvm.get(), KVM_GET_VCPU_MMAP_SIZE, 0);
  auto* run = static_cast<kvm_run*>(
      mmap(nullptr, run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu.get(), 0));
  if (run == MAP_FAILED) return Errno("mmap kvm_run");
  std::vector<uint8_t> cpuid(kKvmCpuid2HeaderBytes + 256 * sizeof(kvm_cpuid_entry2));
  uint32_t nent = 256;
  std::memcpy(cpuid.data(), &nent, 4);
  if (ioctl(kvm.get(), kKvmGetSupportedCpuid, cpuid.data()) < 0 ||
      ioctl(vcpu.get(), kKvmSetCpuid2, cpuid.data()) < 0)
    return Errno("CPUID");
  kvm_sregs sregs{};
  ioctl(vcpu.get(), KVM_GET_SREGS, &sregs);
  sregs.cr0 = 0x80010033;
  sregs.cr3 = *cr3;
  sregs.cr4 = 0x620;
  sregs.efer = 0xd01;
  sregs.cs = Flat(0x08, 0xb, true);
  sregs.ds = sregs.es = sregs.ss = sregs.fs = sregs.gs = Flat(0x10, 0x3, false);
  sregs.tr = kvm_segment{MVMM_TSS_GPA, 103, 0x28, 11, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  sregs.gdt.base = MVMM_GDT_GPA;
  sregs.gdt.limit = MVMM_GDT_ENTRIES * 8 - 1;
  if (ioctl(vcpu.get(), KVM_SET_SREGS, &sregs) < 0) return Errno("KVM_SET_SREGS");
  kvm_regs regs{};
  regs.rip = loaded->entry;
  regs.rsp = MVMM_BOOT_STACK_TOP;
  regs.rdi = MVMM_BOOT_INFO_GPA;
  regs.rflags = 2;
  if (ioctl(vcpu.get(), KVM_SET_REGS, &regs) < 0) return Errno("KVM_SET_REGS");

  run->kvm_valid_regs = KVM_SYNC_X86_REGS;
  BareRun result;
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (ioctl(vcpu.get(), KVM_RUN, 0) < 0) return Errno("KVM_RUN");
    if (run->exit_reason != KVM_EXIT_IO || run->io.port != MVMM_HYPERCALL_PORT)
      return absl::InternalError(absl::StrFormat("unexpected exit %u", run->exit_reason));
    ++result.exits;
    if ((run->s.regs.regs.rax & 0xffffffff) == MVMM_HC_sched_op) break;
    run->s.regs.regs.rax = 0;
    run->kvm_dirty_regs = KVM_SYNC_X86_REGS;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  munmap(run, run_size);
  return result;
}

}  // namespace minivmm::bench
