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
#include "lib/pvop_list.h"

namespace guest {

enum class Backend : uint8_t { kPv, kNative };

// The ops, in the order of GUEST_PVOP_LIST (lib/pvop_list.h, which says
// what each does). kIrq is not a seed with a naive and an optimized form but
// the model of the interrupt flag under backend=pv: hypercall (set_if, the
// default) or shared (Xen's evtchn_upcall_mask in a registered vcpu_info);
// the all-op items `naive` and `optimized` leave it as it is.
enum class PvOp : uint8_t {
#define GUEST_PVOP_ENUM_(id, ...) id,
  GUEST_PVOP_LIST(GUEST_PVOP_ENUM_)
#undef GUEST_PVOP_ENUM_
};
#define GUEST_PVOP_ONE_(...) +1
inline constexpr int kPvOpCount = 0 GUEST_PVOP_LIST(GUEST_PVOP_ONE_);
#undef GUEST_PVOP_ONE_
// The ops `naive` and `optimized` set (the list's `preset` column).
#define GUEST_PVOP_PRESET_(id, name, choices, dflt, xen, preset, ...) +((preset) ? 1 : 0)
inline constexpr int kPvSeedOpCount = 0 GUEST_PVOP_LIST(GUEST_PVOP_PRESET_);
#undef GUEST_PVOP_PRESET_

// Variant values. Not every op accepts every variant: each op's choices in
// GUEST_PVOP_LIST say which, and GUEST_VARIANT_WORD_LIST how each is spelt.
enum class Variant : uint8_t { kNaive, kOptimized, kEager, kPatched, kShared };

// One op of the list, as data.
struct PvOpInfo {
  const char* name;
  const char* choices;  // "a|b|c"
  Variant default_variant;
  Variant xen;
  bool preset;        // set by the all-op items naive and optimized
  const char* bench;  // the variants `minivmm bench` sweeps alone, "a|b" ("": none)
  bool seed;          // a seed patch: also swept alone against Xen's baseline
  const char* description;
};
const PvOpInfo& PvOpInfoOf(PvOp op);

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

// A workload without parameters (lib/workload_list.h): a tag, so that the
// table's parameters and their count are picked by overload, not by
// comparing addresses (not a constant expression everywhere).
struct NoParams {};
inline constexpr NoParams kNoParams{};
// WorkloadSpec::flags.
inline constexpr uint32_t kWorkloadInAll = 1;         // workload=all runs it
inline constexpr uint32_t kWorkloadNeedsMinivmm = 2;  // it needs minivmm's hypercalls
// It checks its own hypercalls against the kernel's counts (kernel/percpu.h):
// the uncounted kernel refuses it.
inline constexpr uint32_t kWorkloadNeedsCounters = 4;

// One row of lib/workload_list.h (its comment says what each field is).
struct WorkloadSpec {
  const char* name;
  const ParamSpec* params;
  int param_count;
  uint32_t flags;
  const char* op;
  const char* op_counter;
  const char* time_op;
  const char* bench;
};

// The table of every workload (lib/workload_list.h), terminated by {nullptr}.
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
  // Each op's default (GUEST_PVOP_LIST).
  Variant variant[kPvOpCount] = {
#define GUEST_PVOP_DEFAULT_(id, name, choices, dflt, ...) Variant::dflt,
      GUEST_PVOP_LIST(GUEST_PVOP_DEFAULT_)
#undef GUEST_PVOP_DEFAULT_
  };
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
