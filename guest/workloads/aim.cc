// workload=aim,tasks=T,iters=I,migrate=K: an AIM7-like job mix across every
// CPU (the kind of load whose many short kernel entries made Linux's
// conditional irq restore worth 1.3%). T ring-3 processes, task i starting
// on CPU i mod N, each with its own address space, private page and TLS
// page, and FPU state; tasks 2k and 2k+1 are partners (a last odd one is
// its own). Each iteration a task runs the mix of MixTaskMain (getpid, a
// one-byte pipe exchange with its partner, set_tls read back through %fs,
// a yield, its private page and SSE registers checked) and, every K
// iterations, moves to the next CPU. Every job is self-checked. Which CPU
// is idle when, and so the IPIs and lock contention, depend on timing: the
// exact identities are the per-vCPU ones of docs/exit-model.md "SMP".
#include "arch/cpu.h"
#include "kernel/mem.h"
#include "kernel/pipe.h"
#include "kernel/sched.h"
#include "kernel/smp.h"
#include "kernel/switch.h"
#include "lib/desc.h"
#include "user/mix_task.h"
#include "workloads/workload.h"

namespace guest {
namespace {

constexpr uint64_t kMaxTasks = 16;
constexpr uint64_t kUserStackPages = 2;

}  // namespace

void RunAim(const WorkloadArgs& args) {
  const uint64_t tasks = args.Get("tasks");
  const uint64_t iters = args.Get("iters");
  const uint64_t migrate = args.Get("migrate");

  // Everything is allocated before the record starts.
  File* rd[kMaxTasks];
  File* wr[kMaxTasks];
  for (uint64_t i = 0; i < tasks; ++i) NewPipe(&rd[i], &wr[i]);
  Task* t[kMaxTasks];
  for (uint64_t i = 0; i < tasks; ++i) {
    auto* a = static_cast<MixTaskArgs*>(AllocUserPages(1));
    const uint64_t stack =
        reinterpret_cast<uint64_t>(AllocUserPages(kUserStackPages)) + kUserStackPages * kPageSize;
    Mm* mm = NewMm();
    t[i] = CreateUserTask("aim", reinterpret_cast<uint64_t>(MixTaskMain),
                          reinterpret_cast<uint64_t>(a), stack, mm);
    t[i]->cpu = static_cast<uint32_t>(i % NrCpus());
    auto* page = static_cast<uint64_t*>(AllocPages(1));
    page[0] = 0xa170000000000000ull | t[i]->pid;
    MapPrivatePage(mm, kPrivateBase, reinterpret_cast<uint64_t>(page));
    a->private_va = kPrivateBase;
    a->private_tag = page[0];
    // Two TLS blocks for slot 0: set_tls alternates between them.
    auto* tls = static_cast<uint64_t*>(AllocUserPages(1));
    for (int k = 0; k < 2; ++k) {
      tls[k * 8] = 0x7150000000000000ull | (t[i]->pid << 8) | static_cast<uint64_t>(k);
      a->tls_desc[k] =
          MakeTlsDescriptor(static_cast<uint32_t>(reinterpret_cast<uint64_t>(tls + k * 8)), 0xfff);
      a->tls_value[k] = tls[k * 8];
    }
    const uint64_t initial[3] = {a->tls_desc[0], 0, 0};
    SetTaskTls(t[i], initial);
    const uint64_t partner = (i ^ 1) < tasks ? (i ^ 1) : i;
    a->pid = t[i]->pid;
    a->id = i;
    a->partner_id = partner;
    a->in_fd = InstallFd(t[i], rd[i]);
    a->out_fd = InstallFd(t[i], wr[partner]);
    a->iters = iters;
    a->cpus = NrCpus();
    a->migrate = migrate;
    for (int b = 0; b < 128; ++b) a->pattern[b] = static_cast<uint8_t>(t[i]->pid * 41 + b);
    t[i]->used_math = true;
    t[i]->fpu_user = true;
  }

  Join join;
  for (uint64_t i = 0; i < tasks; ++i) JoinAdd(&join, t[i]);
  WorkloadRecord rec("aim");
  const uint64_t t0 = cpu::Rdtsc();
  for (uint64_t i = 0; i < tasks; ++i) StartTask(t[i]);
  JoinWait(&join);
  const uint64_t elapsed = cpu::Rdtsc() - t0;
  uint64_t checks = 0;
  for (uint64_t i = 0; i < tasks; ++i) checks += t[i]->exit_value;
  rec.Put("cpus", NrCpus());
  rec.Put("tasks", tasks);
  rec.Put("iters", iters);
  rec.Put("jobs", tasks * iters);
  rec.PutTiming(tasks * iters, elapsed, EmptyLoopTsc(tasks * iters));
  rec.Finish(checks);
}

}  // namespace guest
