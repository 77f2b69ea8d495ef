// Guest command-line parsing and validation (docs/design.md "Guest command line").
// Pure: no I/O; errors come back as one human-readable line.
//
//   backend=pv|native
//   pvops=naive|optimized|xen|<op>:<variant>[,...]
//   workload=<name>[,<param>=<value>...]
#ifndef GUEST_LIB_CMDLINE_H_
#define GUEST_LIB_CMDLINE_H_

#include <stdint.h>

#include "lib/format.h"

namespace guest {

enum class Backend : uint8_t { kPv, kNative };

// kSendIpi and kFlushTlb are the SMP ops: an IPI to a set of CPUs (naive:
// one send_ipi hypercall per target; optimized: one for the whole set) and
// a remote TLB flush (naive: a FLUSH request and an IPI to each target,
// which flushes itself; optimized: one flush_tlb_others hypercall, the
// VMM's paravirtual flush). kSpinlock and kYield are how a contended
// spinlock waits (kernel/spinlock.h): naive, spin, yielding now and then;
// optimized, spin a bounded number of times, then sleep in lock_wait until
// the unlocker's lock_kick; and how it yields (naive: sched_op yield;
// optimized: a directed yield to the holder's vCPU). kIrq is not a seed with a naive and an
// optimized form but the model of the interrupt flag under backend=pv:
// hypercall (set_if, the default) or shared (Xen's evtchn_upcall_mask in a
// registered vcpu_info). The all-op items `naive` and `optimized` leave it
// as it is; `xen` sets it to shared.
enum class PvOp : uint8_t {
  kIrqRestore,
  kFpuSwitch,
  kTls,
  kPteFlags,
  kBatch,
  kSendIpi,
  kFlushTlb,
  kSpinlock,
  kYield,
  kIrq
};
inline constexpr int kPvOpCount = 10;
// The ops `naive` and `optimized` set: all but kIrq, the last.
inline constexpr int kPvSeedOpCount = 9;

// Variant values. Not every op accepts every variant: fpu_switch also has
// kEager, pte_flags also has kPatched, batch spells naive/optimized as
// off/on, and irq has kNaive spelt hypercall and kShared.
enum class Variant : uint8_t { kNaive, kOptimized, kEager, kPatched, kShared };

const char* PvOpName(PvOp op);
// The spelling of `v` for `op` ("off"/"on" for batch).
const char* VariantName(PvOp op, Variant v);
const char* BackendName(Backend b);

// One workload parameter: an integer in [min, max], or (when `choices` is set,
// "a|b|c") the index of one of the choices.
struct ParamSpec {
  const char* name;
  const char* choices;
  uint64_t default_value;
  uint64_t min;
  uint64_t max;
};

inline constexpr int kMaxParams = 10;

struct WorkloadSpec {
  const char* name;
  const ParamSpec* params;
  int param_count;
};

// The table of every workload and its parameters, terminated by {nullptr}.
const WorkloadSpec* WorkloadTable();
const WorkloadSpec* FindWorkload(StrView name);

struct WorkloadArgs {
  const WorkloadSpec* spec = nullptr;
  uint64_t values[kMaxParams] = {};

  // Value of parameter `name`; the name must exist in `spec` (a typo is a
  // kernel bug and returns 0).
  uint64_t Get(StrView name) const;
  // For a choice parameter, the chosen spelling.
  StrView Choice(StrView name) const;
};

struct Config {
  Backend backend = Backend::kPv;
  Variant variant[kPvOpCount] = {Variant::kOptimized, Variant::kOptimized, Variant::kOptimized,
                                 Variant::kOptimized, Variant::kOptimized, Variant::kOptimized,
                                 Variant::kOptimized, Variant::kOptimized, Variant::kOptimized,
                                 Variant::kNaive};
  WorkloadArgs workload;  // spec is "none" unless set

  Variant Get(PvOp op) const { return variant[static_cast<int>(op)]; }
};

// Parses `line` into `*config` (which keeps its defaults for absent keys).
// On failure returns false and writes one line (no trailing newline) saying
// what is wrong into `*error`. pvops irq:shared with backend=native is
// refused: native has no hypervisor to share the flag with.
bool ParseCmdline(StrView line, Config* config, TextBuf* error);

// Appends the config.* report lines for `config`.
void AppendConfigReport(const Config& config, TextBuf* out);

// Returns the index of `word` in "a|b|c", or -1.
int ChoiceIndex(const char* choices, StrView word);
// Returns the `index`th word of "a|b|c" (empty when out of range).
StrView ChoiceAt(const char* choices, uint64_t index);

}  // namespace guest

#endif  // GUEST_LIB_CMDLINE_H_
