// workload=fault,kind=ud|gp|pf|de|int3|gdt: faults on purpose so tests can
// see the exception handler name the vector and shut down with code 3, or
// (gdt) CurrentCpu refuse a GDT base that is no CPU's and panic naming it,
// code 4.
#include "kernel/console.h"
#include "kernel/mem.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"
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

// kind=gdt: a copy of this CPU's GDT elsewhere in the kernel's memory. The
// same descriptors, so the CPU keeps running on it (an interrupt's IRET
// reloads CS and SS from it); only its base is no CPU's.
alignas(16) uint64_t g_gdt_copy[MVMM_GDT_ENTRIES];

void LoadGdt(uint64_t base) {
  const struct __attribute__((packed)) {
    uint16_t limit;
    uint64_t base;
  } gdtr = {MVMM_GDT_ENTRIES * 8 - 1, base};
  asm volatile("lgdt %0" ::"m"(gdtr) : "memory");
}

// Loads the copy, prints its base first ("fault: GDT copy at 0x<base>", for
// the test to find in the panic line), then asks which CPU this is: the
// lookup panics. Should it answer instead, the real GDT is put back and the
// run fails its self-check (code 1).
void FaultGdt() {
  const uint64_t own = GdtBase();
  const uint64_t* from = reinterpret_cast<const uint64_t*>(own);
  for (uint32_t i = 0; i < MVMM_GDT_ENTRIES; ++i) g_gdt_copy[i] = from[i];
  const uint64_t copy = reinterpret_cast<uint64_t>(g_gdt_copy);
  char storage[64];
  TextBuf line(storage, sizeof(storage));
  line.Str("fault: GDT copy at 0x").Hex(copy).Char('\n');
  ConsoleWrite(line.View());
  LoadGdt(copy);
  const uint32_t cpu = CurrentCpu();
  LoadGdt(own);
  line.Clear().Str("fault: CurrentCpu answered ").Dec(cpu).Str(" for a GDT base of no CPU's");
  Fatal(kExitCheckFailed, line.View());
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
  } else if (kind == "gdt") {
    FaultGdt();
  }
}

}  // namespace guest
