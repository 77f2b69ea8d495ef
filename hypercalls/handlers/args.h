// Typed readers of the argument registers (RDI, RSI, RDX, R10, R8 = a[0..4]),
// one per hypercall, mirroring the table of docs/design.md "Hypercalls". Handlers read their
// arguments only through these, so the register-to-meaning mapping is in one
// place and guest addresses are GuestAddress from the start.
#ifndef MINIVMM_HYPERCALLS_HANDLERS_ARGS_H_
#define MINIVMM_HYPERCALLS_HANDLERS_ARGS_H_

#include <cstdint>

#include "minivmm/guest_address.h"
#include "minivmm/hypercall_env.h"

namespace minivmm::hc {

struct MmuUpdateArgs {
  GuestAddress reqs;  // array of struct mvmm_mmu_update
  uint64_t count;
  static MmuUpdateArgs From(const HypercallArgs& a) { return {GuestAddress(a[0]), a[1]}; }
};

struct StackSwitchArgs {
  uint64_t ss;
  uint64_t rsp;
  static StackSwitchArgs From(const HypercallArgs& a) { return {a[0], a[1]}; }
};

struct FpuTaskswitchArgs {
  uint64_t set;     // 1 sets CR0.TS, 0 clears it
  uint64_t reason;  // MVMM_TS_CLEAR_* (a clear only)
  static FpuTaskswitchArgs From(const HypercallArgs& a) { return {a[0], a[1]}; }
};

struct UpdateDescriptorArgs {
  GuestAddress gpa;  // of the GDT entry: MVMM_GDT_GPA + 8 * slot
  uint64_t desc;
  static UpdateDescriptorArgs From(const HypercallArgs& a) { return {GuestAddress(a[0]), a[1]}; }
};

struct SetSegmentBaseArgs {
  uint64_t which;  // MVMM_SEGBASE_*
  uint64_t base;
  static SetSegmentBaseArgs From(const HypercallArgs& a) { return {a[0], a[1]}; }
};

struct MulticallArgs {
  GuestAddress list;  // array of struct mvmm_multicall_entry
  uint64_t count;
  static MulticallArgs From(const HypercallArgs& a) { return {GuestAddress(a[0]), a[1]}; }
};

struct SetTimerOpArgs {
  uint64_t deadline_ns;  // guest time; 0 cancels
  static SetTimerOpArgs From(const HypercallArgs& a) { return {a[0]}; }
};

struct ConsoleIoArgs {
  uint64_t cmd;
  uint64_t count;
  GuestAddress buffer;
  static ConsoleIoArgs From(const HypercallArgs& a) { return {a[0], a[1], GuestAddress(a[2])}; }
};

struct MmuextOpArgs {
  GuestAddress ops;  // array of struct mvmm_mmuext_op
  uint64_t count;
  static MmuextOpArgs From(const HypercallArgs& a) { return {GuestAddress(a[0]), a[1]}; }
};

struct SchedOpArgs {
  uint64_t cmd;
  uint64_t arg;
  static SchedOpArgs From(const HypercallArgs& a) { return {a[0], a[1]}; }
};

struct VcpuOpArgs {
  uint64_t cmd;
  uint64_t vcpu;
  GuestAddress gpa;    // register_*: the struct mvmm_vcpu_info or mvmm_vcpu_runstate
  uint64_t period_ns;  // set_periodic_timer: the same register as `gpa`
  static VcpuOpArgs From(const HypercallArgs& a) { return {a[0], a[1], GuestAddress(a[2]), a[2]}; }
};

struct SetIfArgs {
  uint64_t enable;  // 1 sets RFLAGS.IF, 0 clears it
  static SetIfArgs From(const HypercallArgs& a) { return {a[0]}; }
};

struct WriteCr0Args {
  uint64_t value;
  static WriteCr0Args From(const HypercallArgs& a) { return {a[0]}; }
};

struct SendIpiArgs {
  uint64_t mask;    // bit n: vCPU n
  uint64_t vector;  // MVMM_IPI_VECTOR
  static SendIpiArgs From(const HypercallArgs& a) { return {a[0], a[1]}; }
};

struct FlushTlbOthersArgs {
  uint64_t mask;  // bit n: vCPU n, never the caller
  static FlushTlbOthersArgs From(const HypercallArgs& a) { return {a[0]}; }
};

struct LockWaitArgs {
  GuestAddress word;  // the u32 the waiter saw as `expected`
  uint64_t expected;
  static LockWaitArgs From(const HypercallArgs& a) { return {GuestAddress(a[0]), a[1]}; }
};

struct LockKickArgs {
  uint64_t cpu;
  static LockKickArgs From(const HypercallArgs& a) { return {a[0]}; }
};

struct ReportArgs {
  GuestAddress text;
  uint64_t len;
  static ReportArgs From(const HypercallArgs& a) { return {GuestAddress(a[0]), a[1]}; }
};

}  // namespace minivmm::hc

#endif  // MINIVMM_HYPERCALLS_HANDLERS_ARGS_H_
