// workload=ctx (lmbench lat_ctx) and workload=pipe (lat_pipe): T ring-3
// tasks in a ring pass a one-byte token through pipes for N rounds; task 0
// starts each round. With mm=process (the default) every task is a process
// with its own address space, so a switch between two of them loads CR3;
// with mm=thread they share one. Every task has private pages: a tag page
// and a working set of `ws` KiB that it touches every pass (lat_ctx -s),
// mapped at the same virtual address in every process (at distinct ones
// for threads). Every task has its own TLS blocks (tls=same|one|all says
// how many of the 3 slots differ between tasks; with fs=base, %fs reads
// slot 0's block through a 64-bit FS base instead of its descriptor, as
// x86-64 TLS does) and, with fpu=all, its own
// values in xmm0-7. Each task self-checks after every read.
#include "arch/cpu.h"
#include "kernel/mem.h"
#include "kernel/pipe.h"
#include "kernel/sched.h"
#include "kernel/smp.h"
#include "kernel/switch.h"
#include "lib/desc.h"
#include "user/ring_task.h"
#include "workloads/workload.h"

namespace guest {
namespace {

constexpr int kMaxRing = 16;
constexpr uint64_t kUserStackPages = 2;

// A page of TLS data: slot i's descriptor points at page + 64*i, where a
// distinct value lives.
uint64_t NewTlsPage(uint64_t owner) {
  uint64_t* page = static_cast<uint64_t*>(AllocUserPages(1));
  for (uint64_t i = 0; i < 3; ++i) page[i * 8] = 0x7157000000000000ull | (owner << 8) | i;
  return reinterpret_cast<uint64_t>(page);
}

// The ring's parameters (guest/README.md, workload=ctx and pipe).
struct RingShape {
  uint64_t rounds;
  uint64_t tls_mode;  // 0 same, 1 one, 2 all
  bool fs_base;       // fs=base: a 64-bit FS base per task
  bool fpu;
  bool processes;  // mm=process: an address space per task
  uint64_t ws_bytes;
  uint64_t private_pages;  // the tag page, then the working set
  bool spread;
  uint64_t migrate;
};

RingShape ParseRing(const WorkloadArgs& args) {
  RingShape r;
  r.rounds = args.Get("rounds");
  r.tls_mode = args.Get("tls");
  r.fs_base = args.Get("fs") == 1;  // 0 desc, 1 base
  r.fpu = args.Get("fpu") == 1;
  r.processes = args.Get("mm") == 0;  // 0 process, 1 thread
  r.ws_bytes = args.Get("ws") * 1024;
  r.private_pages = 1 + (r.ws_bytes + kPageSize - 1) / kPageSize;
  r.spread = args.Get("spread") == 1;
  r.migrate = args.Get("migrate");
  return r;
}

// Task i of `tasks`: its address space (`shared_mm` for threads), private
// pages, TLS and FS base, its pipe ends (it reads rd[i] and writes the next
// task's) and the arguments its ring-3 code checks.
Task* NewRingTask(const char* name, uint64_t i, uint64_t tasks, const RingShape& r, Mm* shared_mm,
                  uint64_t shared_tls, File* const* rd, File* const* wr) {
  auto* a = static_cast<RingTaskArgs*>(AllocUserPages(1));
  uint64_t stack =
      reinterpret_cast<uint64_t>(AllocUserPages(kUserStackPages)) + kUserStackPages * kPageSize;
  Mm* mm = r.processes ? NewMm() : shared_mm;
  Task* t = CreateUserTask(name, reinterpret_cast<uint64_t>(RingTaskMain),
                           reinterpret_cast<uint64_t>(a), stack, mm);
  // Private pages: one block of kernel memory, mapped only in `mm`.
  uint64_t va = kPrivateBase + (r.processes ? 0 : i * r.private_pages * kPageSize);
  auto* pages = static_cast<uint64_t*>(AllocPages(r.private_pages));
  for (uint64_t p = 0; p < r.private_pages; ++p)
    MapPrivatePage(mm, va + p * kPageSize, reinterpret_cast<uint64_t>(pages) + p * kPageSize);
  pages[0] = 0x9a9e000000000000ull | t->pid;
  a->private_va = va;
  a->private_tag = pages[0];
  a->ws_bytes = r.ws_bytes;
  a->cpus = NrCpus();
  a->migrate = r.migrate;
  // lat_ctx across CPUs: task i starts on CPU i mod N.
  if (r.spread) t->cpu = static_cast<uint32_t>(i % NrCpus());
  uint64_t own_tls = r.tls_mode == 0 ? shared_tls : NewTlsPage(t->pid);
  uint64_t base[3] = {own_tls, r.tls_mode == 2 ? own_tls + 64 : shared_tls + 64,
                      r.tls_mode == 2 ? own_tls + 128 : shared_tls + 128};
  uint64_t desc[3];
  for (int s = 0; s < 3; ++s) desc[s] = MakeTlsDescriptor(static_cast<uint32_t>(base[s]), 0xfff);
  SetTaskTls(t, desc);
  if (r.fs_base) SetTaskFsBase(t, base[0]);
  a->in_fd = InstallFd(t, rd[i]);
  a->out_fd = InstallFd(t, wr[(i + 1) % tasks]);
  a->rounds = r.rounds;
  a->starter = i == 0;
  a->probe_errors = i == 0;
  a->fs_expect = *reinterpret_cast<uint64_t*>(base[0]);
  a->gs_expect = *reinterpret_cast<uint64_t*>(base[1]);
  a->fpu = r.fpu;
  for (int b = 0; b < 128; ++b) a->pattern[b] = static_cast<uint8_t>(t->pid * 37 + b);
  t->used_math = r.fpu;
  t->fpu_user = r.fpu;
  return t;
}

}  // namespace

void RunRing(const char* name, uint64_t tasks, const WorkloadArgs& args) {
  const RingShape r = ParseRing(args);
  SetPreemption(args.Get("preempt") == 1);

  // All allocation happens before the record starts, so that the record
  // counts only the ring's own events.
  File* rd[kMaxRing];
  File* wr[kMaxRing];
  for (uint64_t i = 0; i < tasks; ++i) NewPipe(&rd[i], &wr[i]);
  uint64_t shared_tls = NewTlsPage(0xff);
  Task* t[kMaxRing];
  Mm* shared_mm = r.processes ? nullptr : NewMm();
  for (uint64_t i = 0; i < tasks; ++i)
    t[i] = NewRingTask(name, i, tasks, r, shared_mm, shared_tls, rd, wr);

  Join join;
  for (uint64_t i = 0; i < tasks; ++i) JoinAdd(&join, t[i]);

  WorkloadRecord rec(name);
  uint64_t t0 = cpu::Rdtsc();
  for (uint64_t i = 0; i < tasks; ++i) StartTask(t[i]);
  JoinWait(&join);
  uint64_t checks = 0;
  for (uint64_t i = 0; i < tasks; ++i) checks += t[i]->exit_value;
  uint64_t elapsed = cpu::Rdtsc() - t0;
  SetPreemption(false);
  rec.Put("tasks", tasks);
  rec.Put("rounds", r.rounds);
  rec.Put("passes", tasks * r.rounds);
  rec.Put("address_spaces", r.processes ? tasks : 1);
  rec.Put("ws_bytes", r.ws_bytes);
  rec.Put("cpus", r.spread || r.migrate != 0 ? NrCpus() : 1);
  rec.PutTiming(tasks * r.rounds, elapsed, EmptyLoopTsc(tasks * r.rounds));
  rec.Finish(checks);
}

void RunCtx(const WorkloadArgs& args) { RunRing("ctx", args.Get("tasks"), args); }

void RunPipe(const WorkloadArgs& args) { RunRing("pipe", 2, args); }

}  // namespace guest
