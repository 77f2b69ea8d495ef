// The guest's lazy-FPU path as a function of what the guest detected on its
// host: the one place where the exact exit counts depend on the host
// (docs/exit-model.md "Counts that depend on the host"). Closed forms, written
// from the guest's rules (guest/kernel/switch.cc), that the whole-VM tests and
// the cross-host test compare with what the guest counted and the VMM saw.
//
// The detected feature is `kernel.ring3_nm`: whether ring-3 SSE with CR0.TS
// set raised #NM in the guest's boot probe. Where it does not (software KVM
// backends), no trap would ever tell the kernel that a ring-3 task used the
// FPU, so a ring-3 FPU user is preloaded on every switch into it; where it
// does, the kernel follows Linux 3.x exactly: six lazy #NM traps, then
// preloads once fpu_counter > 5.
#ifndef MINIVMM_TESTS_COMMON_FPU_MODEL_H_
#define MINIVMM_TESTS_COMMON_FPU_MODEL_H_

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>

namespace minivmm::testing {

// The guest's FPU event counters (kernel.* or a workload's own).
struct FpuEvents {
  uint64_t nm_traps = 0;
  uint64_t preloads = 0;        // fpu_preloads
  uint64_t owner_preloads = 0;  // fpu_owner_preloads: preloads when prev owned the FPU
  uint64_t saves = 0;           // fpu_saves

  FpuEvents& operator+=(const FpuEvents& o) {
    nm_traps += o.nm_traps;
    preloads += o.preloads;
    owner_preloads += o.owner_preloads;
    saves += o.saves;
    return *this;
  }
  bool operator==(const FpuEvents&) const = default;
};

inline FpuEvents operator+(FpuEvents a, const FpuEvents& b) { return a += b; }

inline void PrintTo(const FpuEvents& e, std::ostream* os) {
  *os << "{nm_traps " << e.nm_traps << ", preloads " << e.preloads << ", owner_preloads "
      << e.owner_preloads << ", saves " << e.saves << "}";
}

// The boot probe (guest/kernel/main.cc): one ring-3 task runs one SSE instruction
// with TS set. With ring-3 #NM it traps (clts, restore: it becomes the
// owner) and is saved when it exits; without, nothing happens. The same
// under every fpu_switch variant.
inline FpuEvents BootProbeFpuEvents(bool ring3_nm) {
  FpuEvents e;
  e.nm_traps = ring3_nm ? 1 : 0;
  e.saves = ring3_nm ? 1 : 0;
  return e;
}

// The ctx/pipe ring with fpu=all: T ring-3 tasks, N rounds. Every time slice
// of every task uses the FPU; task 0 has N + 1 slices (it starts the ring),
// the others N, and there are T N + 2 switches (init -> task 0, T N in the
// ring, last -> init). `eager` is fpu_switch:eager (TS never set).
inline FpuEvents RingFpuEvents(uint64_t tasks, uint64_t rounds, bool ring3_nm, bool eager) {
  const uint64_t slices = tasks * rounds + 1;
  FpuEvents e;
  // Every switch away from a task saves it: it used the FPU in its slice.
  e.saves = slices;
  if (eager) {
    // Every switch into a task restores it; nothing traps.
    e.preloads = slices;
    return e;
  }
  if (!ring3_nm) {
    // Preloaded on every switch into it; all but the first (from init)
    // leave a task that owned the FPU.
    e.preloads = slices;
    e.owner_preloads = slices - 1;
    return e;
  }
  // Linux 3.x: a task's first six slices trap (#NM raises fpu_counter to
  // 6); from the seventh on it is preloaded, always from an owner (the
  // previous slice's task used the FPU). Slices are either.
  auto preloaded = [](uint64_t s) { return s > 6 ? s - 6 : 0; };
  e.preloads = preloaded(rounds + 1) + (tasks - 1) * preloaded(rounds);
  e.owner_preloads = e.preloads;
  e.nm_traps = slices - e.preloads;
  return e;
}

// CR0 writes (stts + clts, each one fpu_taskswitch) of a whole run, from its
// FPU events, per fpu_switch variant (docs/exit-model.md, seed 3):
//   naive      boot stts + per switch [prev owned] stts + [preload] clts + a clts per #NM
//   optimized  boot stts + [owned, no preload] stts + [preload, not owned] clts + per #NM
//   eager      boot stts + the clts that turns lazy mode off + a clts per (probe) #NM
inline uint64_t Cr0Writes(const std::string& fpu_switch, const FpuEvents& e) {
  if (fpu_switch == "eager") return 2 + e.nm_traps;
  if (fpu_switch == "optimized")
    return 1 + (e.saves - e.owner_preloads) + (e.preloads - e.owner_preloads) + e.nm_traps;
  return 1 + e.saves + e.preloads + e.nm_traps;
}

// The same CR0 writes as exits: with batch on, those inside a context switch
// are multicall entries, and only the boot stts, the eager clts and the clts
// of each #NM trap are direct hypercalls.
inline uint64_t Cr0WriteExits(const std::string& fpu_switch, bool batch, const FpuEvents& e) {
  if (!batch) return Cr0Writes(fpu_switch, e);
  return (fpu_switch == "eager" ? 2 : 1) + e.nm_traps;
}

}  // namespace minivmm::testing

#endif  // MINIVMM_TESTS_COMMON_FPU_MODEL_H_
