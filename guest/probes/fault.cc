// workload=fault,kind=ud|gp|pf|de|int3: faults on purpose so tests can see
// the exception handler name the vector and shut down with code 3.
#include "kernel/mem.h"
#include "kernel/sched.h"
#include "user/ulib.h"
#include "workloads/workload.h"

namespace guest {
namespace {

// int3 in emulated ring 0 is an emulation failure on the software-KVM hosts
// (docs/hosts.md lists it as delivered from ring 3 only), so the
// breakpoint is taken by a user task; the handler names vector 3 all the same.
extern "C" USER_TEXT void FaultInt3Main(uint64_t) {
  asm volatile("int3");
  user::Exit(0);
}

}  // namespace

void RunFault(const WorkloadArgs& args) {
  StrView kind = args.Choice("kind");
  if (kind == "ud") {
    asm volatile("ud2");
  } else if (kind == "gp") {
    // A non-canonical address: #GP, not #PF.
    asm volatile("movabs $0x8000000000000000, %%rax; movq (%%rax), %%rax" ::: "rax", "memory");
  } else if (kind == "pf") {
    // Page 0 is left unmapped by the kernel's page tables.
    asm volatile("movq 0x8, %%rax" ::: "rax", "memory");
  } else if (kind == "de") {
    asm volatile("xor %%edx, %%edx; xor %%ecx, %%ecx; mov $1, %%eax; divl %%ecx" ::
                     : "rax", "rcx", "rdx");
  } else if (kind == "int3") {
    uint64_t stack = reinterpret_cast<uint64_t>(AllocUserPages(1)) + kPageSize;
    Task* t = CreateUserTask("fault-int3", reinterpret_cast<uint64_t>(FaultInt3Main), 0, stack,
                             KernelMm());
    RunAndWait(t);
  }
}

}  // namespace guest
