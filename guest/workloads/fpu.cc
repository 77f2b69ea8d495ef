// workload=fpu: K kernel threads hold distinct values in xmm0-7 (ring-0 SSE
// moves, which raise #NM with CR0.TS set on every host) and yield to each
// other for N rounds, checking their registers after every switch. The
// lazy policies take #NM traps until a thread's fpu_counter passes 5, then
// preload it: from there on fpu_switch=naive pays the stts/clts pair.
#include "arch/cpu.h"
#include "kernel/mem.h"
#include "kernel/percpu.h"
#include "kernel/sched.h"
#include "kernel/syscall.h"
#include "kernel/syscall_abi.h"
#include "workloads/workload.h"

extern "C" void SseLoad8(const void* src);
extern "C" void SseStore8(void* dst);

namespace guest {
namespace {

struct FpuThreadArgs {
  uint64_t rounds;
  uint64_t checks;
  alignas(16) uint8_t pattern[128];
  alignas(16) uint8_t scratch[128];
};

void FpuThread(uint64_t arg) {
  auto* a = reinterpret_cast<FpuThreadArgs*>(arg);
  SseLoad8(a->pattern);
  for (uint64_t r = 0; r < a->rounds; ++r) {
    Yield();
    SseStore8(a->scratch);
    for (int i = 0; i < 128; ++i) {
      if (a->scratch[i] != a->pattern[i]) SelfCheckFailed(Current(), kCheckFpu);
    }
    ++a->checks;
  }
}

}  // namespace

void RunFpu(const WorkloadArgs& args) {
  uint64_t threads = args.Get("threads");
  uint64_t rounds = args.Get("rounds");
  Task* t[8];
  FpuThreadArgs* a[8];
  for (uint64_t i = 0; i < threads; ++i) {
    a[i] = static_cast<FpuThreadArgs*>(AllocPages(1));
    a[i]->rounds = rounds;
    for (int b = 0; b < 128; ++b) a[i]->pattern[b] = static_cast<uint8_t>((i + 1) * 53 + b);
  }
  Join join;
  for (uint64_t i = 0; i < threads; ++i) {
    t[i] = CreateKernelThread("fpu", FpuThread, reinterpret_cast<uint64_t>(a[i]));
    // Declared FPU user (Linux: kernel_fpu_begin): the eager policy saves
    // and restores only tasks with FPU state; lazy ones trap first anyway.
    t[i]->used_math = true;
    JoinAdd(&join, t[i]);
  }
  WorkloadRecord rec("fpu");
  uint64_t t0 = cpu::Rdtsc();
  for (uint64_t i = 0; i < threads; ++i) StartTask(t[i]);
  JoinWait(&join);
  uint64_t checks = 0;
  for (uint64_t i = 0; i < threads; ++i) checks += a[i]->checks;
  uint64_t elapsed = cpu::Rdtsc() - t0;
  rec.Put("threads", threads);
  rec.Put("rounds", rounds);
  rec.Put("yields", threads * rounds);
  rec.PutTiming(threads * rounds, elapsed, EmptyLoopTsc(threads * rounds));
  rec.Finish(checks);
}

}  // namespace guest
