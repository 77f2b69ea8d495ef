// workload=hostprobe[,loops=N,vmcall=0|1]: the guest half of the VMM's host probe
// (vmm/host_info.h ProbeHostBehaviour, `minivmm info`). Not to be confused
// with probe.cc, the hypercall self-check helper of hcall/hostile. It
// measures three things about the KVM underneath, in this order:
//   1. ring-3 #NM: the boot probe's answer (kernel.ring3_nm), repeated here
//      as hostprobe.ring3_nm because on a host where vmcall never returns
//      the shutdown record that carries kernel.ring3_nm is never sent;
//   2. a ring-0 loop of exactly hostprobe.loop_insns = 2 N + 1 instructions
//      (mov, then N x dec/jnz), which the VMM compares with the host's
//      insn_emulation counter: a delta of at least that many means ring 0
//      ran in KVM's instruction emulator;
//   3. one record with the above and hostprobe.vmcall=start, sent (a report
//      hypercall: it has reached the VMM before the next instruction), then
//      `vmcall` with RAX = 0x7fff (no KVM hypercall has that number) and
//      RBX = RCX = RDX = RSI = 0. A KVM that handles vmcall in the kernel
//      returns -KVM_ENOSYS (-1000) in RAX: the guest reports it as
//      hostprobe.vmcall_rax and shuts down with 0. Where it never returns
//      (the software-KVM hosts spin on it) the VMM ends the run by timeout.
//      With vmcall=0 there is no marker and no vmcall: the record with 1
//      and 2 is sent at the end and the guest shuts down with 0.
#include "kernel/boot.h"
#include "kernel/report.h"
#include "workloads/workload.h"

namespace guest {
namespace {

inline constexpr uint64_t kUnusedKvmHypercall = 0x7fff;

// Exactly 2 * iterations + 1 ring-0 instructions (iterations >= 1).
[[gnu::noinline]] void Ring0Loop(uint32_t iterations) {
  asm volatile(
      "mov %0, %%ecx\n"
      "1: dec %%ecx\n"
      "jnz 1b\n"
      :
      : "r"(iterations)
      : "rcx", "cc");
}

int64_t Vmcall(uint64_t nr) {
  uint64_t rax = nr;
  asm volatile("vmcall" : "+a"(rax) : "b"(0ull), "c"(0ull), "d"(0ull), "S"(0ull) : "memory");
  return static_cast<int64_t>(rax);
}

}  // namespace

void RunHostProbe(const WorkloadArgs& args) {
  uint64_t loops = args.Get("loops");
  WorkloadRecord rec("hostprobe");
  Ring0Loop(static_cast<uint32_t>(loops));
  rec.Put("ring3_nm", g_boot.ring3_nm ? 1 : 0);
  rec.Put("loop_insns", 2 * loops + 1);
  if (args.Get("vmcall") != 0) {
    ReportBuffer().Kv("hostprobe.vmcall", "start");
    SendReport();
    int64_t rax = Vmcall(kUnusedKvmHypercall);
    ReportBuffer().Str("hostprobe.vmcall_rax=").SDec(rax).Char('\n');
  }
  rec.Finish(0);
}

}  // namespace guest
