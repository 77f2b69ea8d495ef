#include "hypercalls/dispatcher.h"

#include <limits>
#include <utility>

#include "absl/strings/str_format.h"
#include "hypercalls/accounting.h"

namespace minivmm {

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

int64_t Dispatcher::HandleExit(HypercallEnv& env) const {
  VcpuState& vcpu = env.exit.vcpu;
  const HypercallRegs regs = vcpu.ReadHypercallRegs();
  int64_t result;
  if (regs.cpl != 0) {
    ++env.exit.stats.hc_refused_cpl3;
    result = -MVMM_EPERM;
  } else {
    const uint64_t nr = regs.rax & 0xFFFFFFFFu;  // EAX
    const HypercallArgs args = {regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8};
    result = Dispatch(env, nr, args, /*direct=*/true);
  }
  vcpu.Set(Reg::kRax, static_cast<uint64_t>(result));
  return result;
}

int64_t Dispatcher::Dispatch(HypercallEnv& env, uint64_t nr, const HypercallArgs& args,
                             bool direct) const {
  if (nr >= MVMM_HC_MAX || table_[nr].name.empty()) {
    ++env.exit.stats.hc_bad_number;
    return -MVMM_ENOSYS;
  }
  int64_t result;
  if (!direct && nr == MVMM_HC_multicall) {
    result = -MVMM_EINVAL;  // no nesting: one multicall is one exit, no more
  } else {
    const absl::StatusOr<uint64_t> value = Run(table_[nr], env, args);
    if (!value.ok()) {
      result = GuestErrno(value.status());
    } else if (*value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      // Only an embedder's handler can get here (builtins return counts and
      // flags); a value the guest would read as an errno is not passed on.
      result = -MVMM_EINVAL;
    } else {
      result = static_cast<int64_t>(*value);
    }
  }
  CountHypercall(env.exit.stats, nr, args, result, direct);
  return result;
}

absl::StatusOr<uint64_t> Dispatcher::Run(const Entry& entry, HypercallEnv& env,
                                         const HypercallArgs& args) const {
  if (entry.fn != nullptr) return entry.fn(env, args);
  if (entry.multicall != nullptr) {
    return entry.multicall(env, args, [this, &env](uint64_t nr, const HypercallArgs& a) {
      return Dispatch(env, nr, a, /*direct=*/false);
    });
  }
  return entry.user(env, args);
}

std::string_view Dispatcher::Name(uint32_t nr) const {
  return nr < MVMM_HC_MAX ? std::string_view(table_[nr].name) : std::string_view();
}

}  // namespace minivmm
