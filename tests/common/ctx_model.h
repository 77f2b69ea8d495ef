// The single-CPU ctx ring's context switches, TLS descriptor updates, FS
// base writes, CR3 writes and IF-clear exits as closed forms of the workload's parameters
// (docs/exit-model.md "1. TLS shadow copies"), so that a test can hold the guest's own counters
// (kernel.switches, kernel.desc_updates, which the guest increments in the code that makes the
// switch and the call) against something the guest did not count. Written from the guest's rules
// (guest/kernel/switch.cc, guest/workloads/ring.cc), as tests/common/fpu_model.h is.
#ifndef MINIVMM_TESTS_COMMON_CTX_MODEL_H_
#define MINIVMM_TESTS_COMMON_CTX_MODEL_H_

#include <cstdint>

namespace minivmm::testing {

// The boot's #NM probe task (guest/kernel/main.cc): init -> probe -> init.
inline constexpr uint64_t kBootProbeSwitches = 2;

// ctx,tasks=T,rounds=N on one CPU: init -> task 0, T per round, last -> init.
constexpr uint64_t CtxRingSwitches(uint64_t tasks, uint64_t rounds) { return tasks * rounds + 2; }

// Every switch of the whole run (kernel.switches): the ring's and the probe's.
constexpr uint64_t CtxRunSwitches(uint64_t tasks, uint64_t rounds) {
  return CtxRingSwitches(tasks, rounds) + kBootProbeSwitches;
}

// tls:naive sends the three TLS slots (GDT 7-9) on every switch of the run.
constexpr uint64_t NaiveTlsDescUpdates(uint64_t tasks, uint64_t rounds) {
  return 3 * CtxRunSwitches(tasks, rounds);
}

// ctx,fs=base: the switches into a ring task, each of which has a 64-bit FS
// base (the ring's switches but the last, back to init).
constexpr uint64_t CtxFsBaseSwitches(uint64_t tasks, uint64_t rounds) {
  return CtxRingSwitches(tasks, rounds) - 1;
}

// FS base writes (kernel.fs_base_loads) of ctx,fs=base: fs_base:naive writes
// on every switch into a ring task; optimized only when the CPU does not
// hold that base. Ring tasks have distinct bases unless tls=same, and the
// only other tasks (init, the boot probe) keep a null %fs: so optimized
// writes on every one of those switches with distinct bases, and once (the
// first) with one shared base.
constexpr uint64_t FsBaseWrites(bool naive, bool shared_base, uint64_t tasks, uint64_t rounds) {
  return naive || !shared_base ? CtxFsBaseSwitches(tasks, rounds) : 1;
}

// CR3 writes (kernel.cr3_writes) of a whole ctx,tasks=T,rounds=N run on
// one CPU (docs/exit-model.md "8."): the boot's load of the kernel's
// tables; under switch_mm:naive one more on the switch into the boot
// probe, a user task of the kernel's address space, which CR3 already
// holds; and the ring's: every switch into a ring task (all of the ring's
// but the last, back to init, a kernel thread) under naive or with one
// address space per task (mm=process), only the first under optimized
// with one for them all (mm=thread).
constexpr uint64_t CtxRingCr3Writes(bool naive, bool processes, uint64_t tasks, uint64_t rounds) {
  return naive || processes ? CtxRingSwitches(tasks, rounds) - 1 : 1;
}
constexpr uint64_t CtxCr3Writes(bool naive, bool processes, uint64_t tasks, uint64_t rounds) {
  return 1 + (naive ? 1 : 0) + CtxRingCr3Writes(naive, processes, tasks, rounds);
}
// Of those, the ones that load the address space CR3 already holds: none
// under optimized; under naive the probe's and, with mm=thread, each
// switch between ring tasks (T·N: all the ring's writes but the first).
constexpr uint64_t CtxSameCr3Writes(bool naive, bool processes, uint64_t tasks, uint64_t rounds) {
  return !naive ? 0 : 1 + (processes ? 0 : tasks * rounds);
}

// IF-clear exits of ctx,tasks=T,rounds=N on one CPU under pv with
// irq:hypercall and the timer off (docs/exit-model.md "4. Conditional
// irq_restore"), whatever the other ops. Each pass (one task's read and
// write of one round) runs three irqsave sections with IF already clear, as
// every system call runs: the pipe's lock in read and in write, and the run
// queue's lock in the blocking read's switch (guest/kernel/pipe.cc,
// waitqueue.cc; WakeAll takes the run queue's lock without saving IF). Each
// section's disable is one set_if(0) exit; its restore, back to IF clear, is
// one more under irq_restore:naive and none under optimized (the seed). The
// rest, T + 14 naive and 2T + 9 optimized, is each task's start and exit
// and the run's fixed part (boot, the #NM probe task, the ring's set-up and
// join): read off two runs and held at every size the tests run.
constexpr uint64_t CtxIfClearExits(bool naive_restore, uint64_t tasks, uint64_t rounds) {
  return naive_restore ? 6 * tasks * rounds + tasks + 14 : 3 * tasks * rounds + 2 * tasks + 9;
}

}  // namespace minivmm::testing

#endif  // MINIVMM_TESTS_COMMON_CTX_MODEL_H_
