#include "hypercalls/dispatcher.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <utility>

#include "absl/strings/str_format.h"
#include "hypercalls/guest_errno.h"

namespace minivmm {

namespace {

enum class CauseOpsRule : uint8_t { kOne, kResult, kSecondArg, kFirstArgBits };
constexpr uint64_t kAnyCommand = std::numeric_limits<uint64_t>::max();

struct CauseRow {
  uint64_t nr;
  uint64_t command;  // kAnyCommand: any
  Cause cause;
  CauseOpsRule ops;
};

constexpr CauseRow kCauseRows[] = {
#define MINIVMM_CAUSE_ROW_(hc, command, cause, ops) \
  {MVMM_HC_##hc, command, Cause::cause, CauseOpsRule::ops},
    MINIVMM_HYPERCALL_CAUSE_LIST(MINIVMM_CAUSE_ROW_)
#undef MINIVMM_CAUSE_ROW_
};
constexpr uint8_t kNoRow = 0xff;
static_assert(std::size(kCauseRows) < kNoRow);

// Each hypercall's first row, or kNoRow.
constexpr std::array<uint8_t, MVMM_HC_MAX> kFirstCauseRow = [] {
  std::array<uint8_t, MVMM_HC_MAX> first{};
  first.fill(kNoRow);
  for (size_t i = std::size(kCauseRows); i-- > 0;)
    first[kCauseRows[i].nr] = static_cast<uint8_t>(i);
  return first;
}();

// A hypercall's rows are adjacent (the list's rule), so its first row and
// those after it with its number are all of them.
constexpr bool RowsOfOneHypercallAreAdjacent() {
  for (size_t i = 0; i < std::size(kCauseRows); ++i)
    for (size_t k = i + 2; k < std::size(kCauseRows); ++k)
      if (kCauseRows[k].nr == kCauseRows[i].nr && kCauseRows[k - 1].nr != kCauseRows[i].nr)
        return false;
  return true;
}
static_assert(RowsOfOneHypercallAreAdjacent());

}  // namespace

std::optional<CauseOps> CauseOf(uint64_t nr, const HypercallArgs& args, int64_t result) {
  if (nr >= MVMM_HC_MAX || kFirstCauseRow[nr] == kNoRow) return std::nullopt;
  for (size_t i = kFirstCauseRow[nr]; i < std::size(kCauseRows) && kCauseRows[i].nr == nr; ++i) {
    const CauseRow& row = kCauseRows[i];
    if (row.command != kAnyCommand && row.command != args[0]) continue;
    if (result < 0) return CauseOps{row.cause, 0};
    switch (row.ops) {
      case CauseOpsRule::kOne:
        return CauseOps{row.cause, 1};
      case CauseOpsRule::kResult:
        return CauseOps{row.cause, static_cast<uint64_t>(result)};
      case CauseOpsRule::kSecondArg:
        return CauseOps{row.cause, args[1]};
      case CauseOpsRule::kFirstArgBits:
        return CauseOps{row.cause, static_cast<uint64_t>(std::popcount(args[0]))};
    }
  }
  return std::nullopt;
}

// The rows CauseOf reads, for the cause alone: asked only when the run has
// the wasted-exit analysis. Its own loop rather than a call of CauseOf,
// which the exit path inlines (a second caller costs that path 2
// instructions an exit: bench/instructions_per_exit.sh).
Cause hc::CommandCause(uint64_t nr, uint64_t command) {
  if (nr >= MVMM_HC_MAX || kFirstCauseRow[nr] == kNoRow) return Cause::kCount;
  for (size_t i = kFirstCauseRow[nr]; i < std::size(kCauseRows) && kCauseRows[i].nr == nr; ++i) {
    if (kCauseRows[i].command == kAnyCommand || kCauseRows[i].command == command)
      return kCauseRows[i].cause;
  }
  return Cause::kCount;
}

int MulticallHistogramBucket(uint64_t entries) {
  return std::min<int>(std::bit_width(entries), kMulticallHistogramBuckets - 1);
}

// The exit path of a hypercall without a cause skips CauseOf with one test
// of this.
const std::array<bool, MVMM_HC_MAX> kHypercallHasCause = [] {
  std::array<bool, MVMM_HC_MAX> has{};
  for (uint64_t nr = 0; nr < MVMM_HC_MAX; ++nr) has[nr] = kFirstCauseRow[nr] != kNoRow;
  return has;
}();

namespace {

// CountHypercall's body, inlined into the exit path.
inline void Count(ExitStats& stats, uint64_t nr, const HypercallArgs& args, int64_t result,
                  bool direct) {
  ++stats.hc_ops[nr];
  if (direct) ++stats.hc_exits[nr];
  if (result < 0) ++stats.hc_errors[nr];
  if (!kHypercallHasCause[nr]) return;
  if (const std::optional<CauseOps> cause = CauseOf(nr, args, result)) {
    stats.CountCause(cause->cause, cause->ops, direct ? 1 : 0);
  }
  if (direct && nr == MVMM_HC_multicall && result >= 0) {
    ++stats.multicall_entries_histogram[MulticallHistogramBucket(args[1])];
  }
  if (nr == MVMM_HC_sched_op && args[0] == MVMM_SCHEDOP_YIELD_TO && result >= 0)
    ++stats.directed_yields;
  if (nr == MVMM_HC_flush_tlb_others && result >= 0) {
    // The targets that were not kicked: flagged for when they next run.
    stats.tlb_flushes_deferred +=
        static_cast<uint64_t>(std::popcount(args[0])) - static_cast<uint64_t>(result);
  }
}

}  // namespace

namespace {

// The ABI's errno values by name, for notes a person reads.
std::string ErrnoName(int64_t result) {
  switch (-result) {
    case MVMM_EPERM:
      return "-EPERM";
    case MVMM_ENOENT:
      return "-ENOENT";
    case MVMM_E2BIG:
      return "-E2BIG";
    case MVMM_EFAULT:
      return "-EFAULT";
    case MVMM_EINVAL:
      return "-EINVAL";
    case MVMM_ENOSYS:
      return "-ENOSYS";
    default:
      return std::to_string(result);
  }
}

}  // namespace

void RefusalNotes::Note(uint64_t nr, std::string_view name, int64_t result, const char* reason) {
  // Keyed by name, not number: unregistered numbers are the guest's to
  // choose, and must not make the notes grow.
  const Kind kind{name, reason};
  if (std::find(seen_.begin(), seen_.end(), kind) != seen_.end()) return;
  seen_.push_back(kind);
  lines_.push_back(absl::StrFormat("hypercall %s refused with %s: %s (noted once per kind)",
                                   name.empty() ? absl::StrFormat("nr%d", nr) : std::string(name),
                                   ErrnoName(result),
                                   reason != nullptr ? reason : "no reason given"));
}

Dispatcher::Entry Dispatcher::MakeBuiltin(const char* name, HypercallFn fn) {
  Entry entry;
  entry.name = name;
  entry.fn = fn;
  return entry;
}

Dispatcher::Entry Dispatcher::MakeBuiltin(const char* name, MulticallFn fn) {
  Entry entry;
  entry.name = name;
  entry.multicall = fn;
  return entry;
}

Dispatcher::Dispatcher() {
  // Overload resolution picks the entry kind from the handler's type.
#define MVMM_HC_REGISTER_(nr, name) table_[nr] = MakeBuiltin(#name, &hc::name);
  MVMM_HYPERCALL_LIST(MVMM_HC_REGISTER_)
#undef MVMM_HC_REGISTER_
}

absl::Status Dispatcher::Register(uint32_t nr, std::string name, UserHypercallFn fn) {
  if (nr < MVMM_HC_USER_FIRST || nr > MVMM_HC_USER_LAST) {
    return absl::OutOfRangeError(absl::StrFormat("hypercall %d is outside the user range [%d, %d]",
                                                 nr, MVMM_HC_USER_FIRST, MVMM_HC_USER_LAST));
  }
  if (name.empty()) return absl::InvalidArgumentError("a hypercall needs a name");
  if (!fn) return absl::InvalidArgumentError("a hypercall needs a handler");
  Entry& entry = table_[nr];
  if (!entry.name.empty()) {
    return absl::AlreadyExistsError(
        absl::StrFormat("hypercall %d is already registered as %s", nr, entry.name));
  }
  entry.name = std::move(name);
  entry.user = std::move(fn);
  return absl::OkStatus();
}

// The exit path of every hypercall: no allocation, no formatting, no call
// but the handler's. An observer or a refusal leaves it through one branch.
int64_t Dispatcher::HandleExit(HypercallEnv& env, ExitEvent* event, RefusalNotes* notes) const {
  VcpuState& vcpu = env.exit.vcpu;
  const HypercallRegs regs = vcpu.ReadHypercallRegs();
  const uint64_t nr = regs.rax & 0xFFFFFFFFu;  // EAX
  const HypercallArgs args = {regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8};
  HypercallResult result;
  if (regs.cpl != 0) [[unlikely]] {
    ++env.exit.stats.hc_refused_cpl3;
    result = Refuse(MVMM_EPERM, "called from CPL != 0");
  } else {
    result = Dispatch(env, nr, args, /*direct=*/true);
  }
  vcpu.Set(Reg::kRax, static_cast<uint64_t>(result.value));
  if (event != nullptr || result.refusal != nullptr) [[unlikely]]
    Record(nr, args, result, event, notes);
  return result.value;
}

void Dispatcher::Record(uint64_t nr, const HypercallArgs& args, HypercallResult result,
                        ExitEvent* event, RefusalNotes* notes) const {
  if (notes != nullptr && result.refusal != nullptr)
    notes->Note(nr, Name(nr), result.value, result.refusal);
  if (event == nullptr) return;
  event->hypercall = static_cast<int64_t>(nr);
  event->args = args;
  event->result = result.value;
  event->refusal = result.refusal != nullptr ? result.refusal : "";
}

HypercallResult Dispatcher::Dispatch(HypercallEnv& env, uint64_t nr, const HypercallArgs& args,
                                     bool direct) const {
  if (nr >= MVMM_HC_MAX || table_[nr].fn == nullptr) [[unlikely]]
    return DispatchOther(env, nr, args, direct);
  const HypercallResult result = table_[nr].fn(env, args);
  Count(env.exit.stats, nr, args, result.value, direct);
  return result;
}

// Unregistered numbers, the multicall and embedders' handlers.
HypercallResult Dispatcher::DispatchOther(HypercallEnv& env, uint64_t nr, const HypercallArgs& args,
                                          bool direct) const {
  if (nr >= MVMM_HC_MAX || table_[nr].name.empty()) {
    ++env.exit.stats.hc_bad_number;
    return Refuse(MVMM_ENOSYS, "no such hypercall");
  }
  const Entry& entry = table_[nr];
  HypercallResult result;
  if (entry.multicall != nullptr) {
    result = !direct
                 ? Refuse(MVMM_EINVAL, "a multicall inside a multicall")  // one exit, no more
                 : entry.multicall(env, args, [this, &env](uint64_t op, const HypercallArgs& a) {
                     // lock_wait may sleep and writes its outcome into RAX
                     // after the exit: it needs an exit of its own.
                     if (op == MVMM_HC_lock_wait) [[unlikely]] {
                       const HypercallResult refused =
                           Refuse(MVMM_EINVAL, "lock_wait inside a multicall");
                       Count(env.exit.stats, op, a, refused.value, /*direct=*/false);
                       return refused.value;
                     }
                     return Dispatch(env, op, a, /*direct=*/false).value;
                   });
  } else {
    // An embedder's handler: its status is mapped here, off the builtins'
    // path; its message is not passed on (it may be formatted, not static).
    const absl::StatusOr<uint64_t> value = entry.user(env, args);
    if (!value.ok()) {
      result = Refuse(static_cast<int>(-GuestErrno(value.status())),
                      "refused by the embedder's handler");
    } else if (*value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      result = Refuse(MVMM_EINVAL, "the embedder's handler returned a value above INT64_MAX");
    } else {
      result = Done(*value);
    }
  }
  Count(env.exit.stats, nr, args, result.value, direct);
  return result;
}

std::string_view Dispatcher::Name(uint32_t nr) const {
  return nr < MVMM_HC_MAX ? std::string_view(table_[nr].name) : std::string_view();
}

void CountHypercall(ExitStats& stats, uint64_t nr, const HypercallArgs& args, int64_t result,
                    bool direct) {
  Count(stats, nr, args, result, direct);
}

}  // namespace minivmm
