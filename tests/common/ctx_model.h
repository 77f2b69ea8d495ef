// The single-CPU ctx ring's context switches and TLS descriptor updates as
// closed forms of the workload's parameters (docs/exit-model.md "1. TLS
// shadow copies"), so that a test can hold the guest's own counters
// (kernel.switches, kernel.desc_updates, which the guest increments in the
// code that makes the switch and the call) against something the guest did
// not count. Written from the guest's rules (guest/kernel/switch.cc,
// guest/workloads/ctx.cc), as tests/common/fpu_model.h is.
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

}  // namespace minivmm::testing

#endif  // MINIVMM_TESTS_COMMON_CTX_MODEL_H_
