// Guest command-line parsing and validation (docs/design.md "Guest command line").
// Pure: no I/O; errors come back as one human-readable line.
//
//   backend=pv|native
//   pvops=naive|optimized|<op>:<variant>[,...]
//   workload=<name>[,<param>=<value>...]
#ifndef GUEST_LIB_CMDLINE_H_
#define GUEST_LIB_CMDLINE_H_

#include <stdint.h>

#include "lib/format.h"

namespace guest {

enum class Backend : uint8_t { kPv, kNative };

enum class PvOp : uint8_t { kIrqRestore, kFpuSwitch, kTls, kPteFlags, kBatch };
inline constexpr int kPvOpCount = 5;

// Variant values. Not every op accepts every variant (see OpAcceptsVariant):
// fpu_switch also has kEager, pte_flags also has kPatched, and batch spells
// naive/optimized as off/on.
enum class Variant : uint8_t { kNaive, kOptimized, kEager, kPatched };

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

inline constexpr int kMaxParams = 8;

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
                                 Variant::kOptimized, Variant::kOptimized};
  WorkloadArgs workload;  // spec is "none" unless set

  Variant Get(PvOp op) const { return variant[static_cast<int>(op)]; }
};

// Parses `line` into `*config` (which keeps its defaults for absent keys).
// On failure returns false and writes one line (no trailing newline) saying
// what is wrong into `*error`.
bool ParseCmdline(StrView line, Config* config, TextBuf* error);

// Appends the config.* report lines for `config`.
void AppendConfigReport(const Config& config, TextBuf* out);

// Returns the index of `word` in "a|b|c", or -1.
int ChoiceIndex(const char* choices, StrView word);
// Returns the `index`th word of "a|b|c" (empty when out of range).
StrView ChoiceAt(const char* choices, uint64_t index);

}  // namespace guest

#endif  // GUEST_LIB_CMDLINE_H_
