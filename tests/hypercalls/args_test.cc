// The typed argument readers (hypercalls/handlers/args.h), derived from the
// ABI's argument lists: every field reads its own register, and a few calls
// by hand, as docs/hypercalls.md and Xen's x86-64 order have them.
#include "hypercalls/handlers/args.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>

namespace minivmm::hc {
namespace {

uint64_t Value(GuestAddress a) { return a.value(); }
uint64_t Value(uint64_t v) { return v; }

// Registers 0..4 hold 100..104.
constexpr HypercallArgs kRegisters = {100, 101, 102, 103, 104};

TEST(ArgsTest, EveryFieldOfEveryCallReadsItsOwnRegister) {
  int calls = 0;
  int fields = 0;
#define MINIVMM_TEST_FIELD_(reg, kind, field)                                  \
  EXPECT_EQ(Value(args.field), 100u + (reg)) << name << "." #field;            \
  static_assert(std::is_same_v<decltype(args.field), ArgKind_##kind>, #field); \
  ++fields;
#define MINIVMM_TEST_CALL_(nr, call)                             \
  {                                                              \
    [[maybe_unused]] const char* name = #call;                   \
    [[maybe_unused]] const auto args = ReadArgs<nr>(kRegisters); \
    MVMM_HC_ARGS_##call(MINIVMM_TEST_FIELD_);                    \
    ++calls;                                                     \
  }
#define MINIVMM_TEST_ONE_(nr, call) +1
  MVMM_HYPERCALL_LIST(MINIVMM_TEST_CALL_)
  EXPECT_EQ(calls, 0 MVMM_HYPERCALL_LIST(MINIVMM_TEST_ONE_));
#undef MINIVMM_TEST_ONE_
#undef MINIVMM_TEST_CALL_
#undef MINIVMM_TEST_FIELD_
  // Lists that lost their fields would read nothing and pass the rest.
  EXPECT_GT(fields, calls);
}

TEST(ArgsTest, CallsReadTheirArgumentsInXensOrder) {
  const HypercallArgs raw = {7, 4096, 0x2000, 9, 9};
  const auto console = ReadArgs<MVMM_HC_console_io>(raw);
  EXPECT_EQ(console.cmd, 7u);
  EXPECT_EQ(console.count, 4096u);
  EXPECT_EQ(console.buffer.value(), 0x2000u);
  const auto multicall = ReadArgs<MVMM_HC_multicall>(raw);
  EXPECT_EQ(multicall.list.value(), 7u);
  EXPECT_EQ(multicall.count, 4096u);
  const auto vcpu_op = ReadArgs<MVMM_HC_vcpu_op>(raw);
  EXPECT_EQ(vcpu_op.arg, 0x2000u);
  EXPECT_TRUE(std::is_empty_v<Args<MVMM_HC_force_evtchn_callback>>);
}

}  // namespace
}  // namespace minivmm::hc
