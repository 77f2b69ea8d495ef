// Self-checking hypercall probes for workload=hcall and workload=hostile:
// each call's result is compared with the exact answer the VMM documents
// (hypercalls/handlers/*.cc), and every call is counted like any other
// (kernel/hypercall.h), so kernel.hc.* stays equal to the VMM's counts.
#ifndef GUEST_PROBES_PROBE_H_
#define GUEST_PROBES_PROBE_H_

#include <stdint.h>

#include "lib/format.h"

namespace guest {

class Prober {
 public:
  // kStopAtFirst (hcall): the first mismatch prints one line and shuts down
  // with code 1. kCountAll (hostile): a mismatch prints one line and the
  // run goes on; the workload decides at its end.
  enum class Mode { kStopAtFirst, kCountAll };
  static constexpr uint64_t kNoTag = ~0ull;

  Prober(const char* workload, Mode mode) : workload_(workload), mode_(mode) {}

  // Issues hypercall `nr` (counted) and checks that it returned `want`.
  // `what` names the case; `tag` (if not kNoTag) is appended to it in the
  // failure message (a slot, a type, an index...). Returns the result.
  int64_t Call(const char* what, uint64_t tag, int64_t want, uint64_t nr, uint64_t a0 = 0,
               uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0, uint64_t a4 = 0);
  // Checks a value the probe computed (a result written back, memory the
  // VMM must not have touched, ...).
  bool Expect(const char* what, uint64_t tag, int64_t got, int64_t want);
  bool ExpectTrue(const char* what, uint64_t tag, bool ok) {
    return Expect(what, tag, ok ? 1 : 0, 1);
  }

  uint64_t checks() const { return checks_; }
  uint64_t failures() const { return failures_; }

 private:
  const char* workload_;
  Mode mode_;
  uint64_t checks_ = 0;
  uint64_t failures_ = 0;
};

// "-22 (EINVAL)" for the errno values of the ABI, else the number.
void AppendResult(int64_t v, TextBuf* out);

class WorkloadRecord;
struct HypercallCounts;

// Puts "<name>.calls" (direct calls = exits), "<name>.ops" (direct calls
// plus multicall entries) and "<name>.errors" for every hypercall of the
// ABI, and "bad_number", as deltas since `before`.
void PutHypercallDeltas(WorkloadRecord* rec, const HypercallCounts& before);

// The machine state the probes change and must put back.
namespace probe {
inline constexpr uint64_t kCr0Pe = 1ull << 0;
inline constexpr uint64_t kCr0Ts = 1ull << 3;
inline constexpr uint64_t kCr0Wp = 1ull << 16;
inline constexpr uint64_t kCr0Pg = 1ull << 31;

// The guest-physical address of GDT entry `slot` (any slot, no checks).
uint64_t GdtEntryGpa(uint64_t slot);
// What the GDT page holds in `slot` (< 512), read through the mapping.
uint64_t ReadGdt(uint64_t slot);
// RFLAGS.IF as 0 or 1.
uint64_t CurrentIf();

// The probes of set_if need RFLAGS.IF=0, which ArchLocalIrqSave gives under
// irq:hypercall and native but not under irq:shared (it sets the mask and
// leaves IF=1). ClearIf executes cli and returns RFLAGS from before;
// RestoreIf puts it back. Neither exits.
uint64_t ClearIf();
void RestoreIf(uint64_t rflags);
}  // namespace probe

}  // namespace guest

#endif  // GUEST_PROBES_PROBE_H_
