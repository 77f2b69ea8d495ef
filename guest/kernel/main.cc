// KernelMain: from the VMM's 64-bit entry to the workload and shutdown.
#include "arch/cpu.h"
#include "arch/trap.h"
#include "kernel/boot.h"
#include "kernel/console.h"
#include "kernel/counters.h"
#include "kernel/fpu.h"
#include "kernel/mem.h"
#include "kernel/panic.h"
#include "kernel/report.h"
#include "kernel/sched.h"
#include "kernel/smp.h"
#include "kernel/switch.h"
#include "pv/pv_ops.h"
#include "user/ring_task.h"
#include "workloads/workload.h"

namespace guest {

constinit BootState g_boot;

namespace {

// Boot info we cannot trust enough to use hypercalls: say so on the UART
// and leave through the debug-exit port.
[[noreturn]] void BadBootInfo(StrView what) {
  g_boot.under_minivmm = false;
  ConsoleInit(ConsoleKind::kUart);
  Fatal(kExitAssert, what);
}

void ParseConfig(StrView line) {
  char storage[200];
  TextBuf err(storage, sizeof(storage));
  Config& config = g_boot.config;
  bool ok = ParseCmdline(line, &config, &err);
  // Even a refused line picks the console a correct backend= asked for.
  ConsoleInit(config.backend == Backend::kPv ? ConsoleKind::kPv : ConsoleKind::kUart);
  if (!ok) Fatal(kExitBadCmdline, err.View());
  if (config.backend == Backend::kPv && !g_boot.under_minivmm) {
    Fatal(kExitBadCmdline, "backend=pv needs minivmm's hypercalls; use backend=native here");
  }
}

// Does ring-3 SSE with CR0.TS=1 raise #NM here? (docs/hosts.md: not on the
// software-KVM hosts.) A user task runs one SSE instruction with TS set.
void ProbeRing3Nm() {
  uint64_t stack = reinterpret_cast<uint64_t>(AllocUserPages(1)) + kPageSize;
  Task* t =
      CreateUserTask("fpu-probe", reinterpret_cast<uint64_t>(FpuProbeMain), 0, stack, KernelMm());
  RunAndWait(t);
  g_boot.ring3_nm = Ring3NmSeen();
}

}  // namespace

}  // namespace guest

using namespace guest;

extern "C" [[noreturn]] void KernelMain(const mvmm_boot_info* bi) {
  IdtInit();
  if (bi->magic != MVMM_BOOT_MAGIC) BadBootInfo("bad boot_info magic (not entered by minivmm?)");
  if (bi->version != MVMM_BOOT_VERSION) BadBootInfo("unsupported boot_info version");
  if (bi->hypercall_port != MVMM_HYPERCALL_PORT) BadBootInfo("unexpected hypercall port");
  g_boot.under_minivmm = true;
  g_boot.memory_size = bi->memory_size;
  g_boot.gdt_gpa = bi->gdt_gpa;
  g_boot.tss = reinterpret_cast<mvmm_tss*>(bi->tss_gpa);
  g_boot.first_free = bi->first_free_gpa;
  g_boot.timer_hz = bi->timer_hz;
  g_boot.vcpu_info_gpa = bi->vcpu_info_gpa;
  // 0 from a VMM older than the field: one CPU.
  const uint32_t nr_cpus = bi->nr_cpus == 0 ? 1 : bi->nr_cpus;
  if (nr_cpus > MVMM_MAX_CPUS) BadBootInfo("boot_info nr_cpus above MVMM_MAX_CPUS");
  if (!SmpBoot(nr_cpus))
    BadBootInfo("a secondary CPU could not come up (its own GDT, its runstate area)");
  uint64_t len = bi->cmdline_len;
  if (len > MVMM_CMDLINE_MAX) len = MVMM_CMDLINE_MAX;
  StrView line =
      bi->cmdline_gpa ? StrView(reinterpret_cast<const char*>(bi->cmdline_gpa), len) : StrView();
  KernelRun(line);
}

void guest::KernelRun(StrView cmdline) {
  ParseConfig(cmdline);
  PvOpsInit(g_boot.config);

  // The configuration we actually use, as one record.
  TextBuf& r = ReportBuffer();
  AppendConfigReport(g_boot.config, &r);
  SendReport();

  MemInit(g_boot.first_free, g_boot.memory_size, g_boot.gdt_gpa);
  if (g_boot.config.Get(PvOp::kPteFlags) == Variant::kPatched)
    g_boot.patched_sites = PvPatchCallSites();
  SchedInit();
  SwitchInit();
  ProbeRing3Nm();
  FpuPolicyInit();
  ArchIrqEnable();

  RunWorkload(g_boot.config);
  // Tasks that ran on other CPUs leave them still counting (a last switch
  // to idle, the block): wait, reading memory only, until each is blocked
  // in its idle loop, so that the counts it reports are final.
  SmpWaitBlocked(OtherCpusMask());
  Shutdown(kExitOk);
}
