#include "hypercalls/dispatcher.h"

#include <gtest/gtest.h>

#include <limits>
#include <set>

#include "tests/hypercalls/expect.h"

namespace minivmm {
namespace {

using testing::CheckedVm;

absl::StatusOr<uint64_t> ReturnSeven(HypercallEnv&, const HypercallArgs&) { return 7; }

class DispatcherTest : public ::testing::Test {
 protected:
  void LoadRegs(uint64_t rax, HypercallArgs a) { vm_.SetHypercallRegs(rax, a); }
  CheckedVm vm_;
};

TEST_F(DispatcherTest, EveryBuiltinIsRegisteredUnderItsAbiName) {
#define CHECK_NAME_(nr, name) EXPECT_EQ(vm_.dispatcher.Name(nr), #name);
  MVMM_HYPERCALL_LIST(CHECK_NAME_)
#undef CHECK_NAME_
  // Exactly the list's numbers, and nothing else, are registered.
  std::set<uint32_t> listed;
#define LISTED_(nr, name) listed.insert(nr);
  MVMM_HYPERCALL_LIST(LISTED_)
#undef LISTED_
  ASSERT_FALSE(listed.empty());
  for (uint32_t nr = 0; nr < MVMM_HC_MAX; ++nr)
    EXPECT_EQ(!vm_.dispatcher.Name(nr).empty(), listed.count(nr) == 1) << nr;
}

TEST_F(DispatcherTest, UnregisteredNamesAreEmpty) {
  EXPECT_EQ(vm_.dispatcher.Name(0), "");
  EXPECT_EQ(vm_.dispatcher.Name(2), "");
  EXPECT_EQ(vm_.dispatcher.Name(MVMM_HC_USER_FIRST), "");
  EXPECT_EQ(vm_.dispatcher.Name(MVMM_HC_MAX), "");
  EXPECT_EQ(vm_.dispatcher.Name(~0u), "");
}

TEST_F(DispatcherTest, UnknownNumbersAreEnosysAndCountedAsBadNumbers) {
  for (uint64_t nr : {0ull, 2ull, 63ull, 64ull, 127ull, 128ull, 1ull << 40, ~0ull}) {
    EXPECT_EQ(testing::AbiRow(vm_.Call(nr), "other.ENOSYS"), -MVMM_ENOSYS) << nr;
  }
  EXPECT_EQ(vm_.stats.hc_bad_number, 8u);
  EXPECT_EQ(vm_.stats.hc_exits, decltype(vm_.stats.hc_exits){});
  EXPECT_EQ(vm_.stats.hc_ops, decltype(vm_.stats.hc_ops){});
}

TEST_F(DispatcherTest, HandleExitReadsAbiRegistersAndWritesRax) {
  HypercallArgs seen{};
  ASSERT_TRUE(vm_.dispatcher
                  .Register(70, "probe",
                            [&](HypercallEnv&, const HypercallArgs& a) -> absl::StatusOr<uint64_t> {
                              seen = a;
                              return 1234;
                            })
                  .ok());
  LoadRegs(70, {1, 2, 3, 4, 5});
  vm_.vcpu.Set(Reg::kRcx, 99);  // not an argument register (syscall clobbers it)
  vm_.vcpu.Set(Reg::kR9, 98);
  EXPECT_EQ(vm_.dispatcher.HandleExit(vm_.env), 1234);
  EXPECT_EQ(seen, (HypercallArgs{1, 2, 3, 4, 5}));
  EXPECT_EQ(vm_.vcpu.Get(Reg::kRax), 1234u);
  EXPECT_EQ(vm_.stats.hc_exits[70], 1u);
  EXPECT_EQ(vm_.stats.hc_ops[70], 1u);
}

TEST_F(DispatcherTest, HandleExitWritesNegativeErrnoToRax) {
  LoadRegs(MVMM_HC_set_if, {5});
  EXPECT_EQ(vm_.dispatcher.HandleExit(vm_.env), -MVMM_EINVAL);
  EXPECT_EQ(vm_.vcpu.Get(Reg::kRax), static_cast<uint64_t>(-MVMM_EINVAL));
  EXPECT_EQ(vm_.stats.hc_errors[MVMM_HC_set_if], 1u);
}

TEST_F(DispatcherTest, HandleExitTakesTheNumberFromEax) {
  LoadRegs((0xFFFFFFFFull << 32) | MVMM_HC_set_if, {1});
  EXPECT_EQ(vm_.dispatcher.HandleExit(vm_.env), 0);
  EXPECT_EQ(vm_.vcpu.Get(Reg::kRflags) & MVMM_RFLAGS_IF, MVMM_RFLAGS_IF);
}

TEST_F(DispatcherTest, HandleExitUnknownNumberIsEnosys) {
  LoadRegs(1ull << 31, {});
  EXPECT_EQ(vm_.dispatcher.HandleExit(vm_.env), -MVMM_ENOSYS);
  EXPECT_EQ(vm_.vcpu.Get(Reg::kRax), static_cast<uint64_t>(-MVMM_ENOSYS));
}

TEST_F(DispatcherTest, CallFromCpl3IsEpermBeforeAnyHandler) {
  vm_.PokeBytes(0x4000, "x");
  LoadRegs(MVMM_HC_console_io, {0, 1, 0x4000});
  vm_.vcpu.cpl = 3;
  EXPECT_EQ(vm_.dispatcher.HandleExit(vm_.env), -MVMM_EPERM);
  EXPECT_EQ(vm_.vcpu.Get(Reg::kRax), static_cast<uint64_t>(-MVMM_EPERM));
  EXPECT_EQ(vm_.console.out, "");
  EXPECT_EQ(vm_.stats.hc_refused_cpl3, 1u);
  EXPECT_EQ(vm_.stats.hc_exits[MVMM_HC_console_io], 0u);
  EXPECT_EQ(vm_.stats.hc_ops[MVMM_HC_console_io], 0u);
}

TEST_F(DispatcherTest, CallFromRingOneOrTwoIsEperm) {
  for (int cpl : {1, 2}) {
    LoadRegs(MVMM_HC_sched_op, {MVMM_SCHEDOP_SHUTDOWN, 0});
    vm_.vcpu.cpl = cpl;
    EXPECT_EQ(vm_.dispatcher.HandleExit(vm_.env), -MVMM_EPERM);
  }
  EXPECT_EQ(vm_.control.request, VcpuRequest::kNone);
}

TEST_F(DispatcherTest, CallFromCpl3WithUnknownNumberIsStillEperm) {
  LoadRegs(12345, {});
  vm_.vcpu.cpl = 3;
  EXPECT_EQ(vm_.dispatcher.HandleExit(vm_.env), -MVMM_EPERM);
  EXPECT_EQ(vm_.stats.hc_bad_number, 0u);
}

TEST_F(DispatcherTest, NonDirectDispatchCountsOpButNoExit) {
  EXPECT_EQ(vm_.dispatcher.Dispatch(vm_.env, MVMM_HC_set_if, {1}, /*direct=*/false).value, 0);
  EXPECT_EQ(vm_.stats.hc_exits[MVMM_HC_set_if], 0u);
  EXPECT_EQ(vm_.stats.hc_ops[MVMM_HC_set_if], 1u);
  EXPECT_EQ(vm_.cause(Cause::kIfSet).ops, 1u);
  EXPECT_EQ(vm_.cause(Cause::kIfSet).exits, 0u);
}

TEST_F(DispatcherTest, NonDirectMulticallIsEinval) {
  const HypercallResult r =
      vm_.dispatcher.Dispatch(vm_.env, MVMM_HC_multicall, {0, 0}, /*direct=*/false);
  EXPECT_EQ(r.value, -MVMM_EINVAL);
  EXPECT_NE(r.refusal, nullptr);
}

TEST_F(DispatcherTest, RegisterRefusesNumbersOutsideUserRange) {
  for (uint32_t nr : {0u, 1u, 42u, 63u, 128u, ~0u}) {
    EXPECT_EQ(vm_.dispatcher.Register(nr, "x", ReturnSeven).code(), absl::StatusCode::kOutOfRange)
        << nr;
  }
  EXPECT_EQ(vm_.dispatcher.Name(1), "mmu_update");
}

TEST_F(DispatcherTest, RegisterAcceptsBothEndsOfUserRange) {
  EXPECT_TRUE(vm_.dispatcher.Register(MVMM_HC_USER_FIRST, "first", ReturnSeven).ok());
  EXPECT_TRUE(vm_.dispatcher.Register(MVMM_HC_USER_LAST, "last", ReturnSeven).ok());
  EXPECT_EQ(vm_.dispatcher.Name(MVMM_HC_USER_LAST), "last");
  EXPECT_EQ(vm_.Call(MVMM_HC_USER_FIRST), 7);
  EXPECT_EQ(vm_.Call(MVMM_HC_USER_LAST), 7);
}

TEST_F(DispatcherTest, RegisterRefusesEmptyNameOrHandler) {
  EXPECT_EQ(vm_.dispatcher.Register(80, "", ReturnSeven).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(vm_.dispatcher.Register(80, "x", nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(vm_.dispatcher.Name(80), "");
}

TEST_F(DispatcherTest, RegisterRefusesTakenNumber) {
  ASSERT_TRUE(vm_.dispatcher.Register(80, "a", ReturnSeven).ok());
  EXPECT_EQ(vm_.dispatcher.Register(80, "b", ReturnSeven).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(vm_.dispatcher.Name(80), "a");
}

TEST_F(DispatcherTest, UserHandlerErrorBecomesErrno) {
  ASSERT_TRUE(vm_.dispatcher
                  .Register(81, "fails",
                            [](HypercallEnv&, const HypercallArgs&) -> absl::StatusOr<uint64_t> {
                              return absl::NotFoundError("nothing");
                            })
                  .ok());
  EXPECT_EQ(vm_.Call(81), -MVMM_ENOENT);
  EXPECT_EQ(vm_.stats.hc_errors[81], 1u);
}

TEST_F(DispatcherTest, UserHandlerValueAboveInt64MaxIsEinval) {
  ASSERT_TRUE(vm_.dispatcher
                  .Register(82, "huge",
                            [](HypercallEnv&, const HypercallArgs&) -> absl::StatusOr<uint64_t> {
                              return uint64_t{1} << 63;
                            })
                  .ok());
  EXPECT_EQ(vm_.Call(82), -MVMM_EINVAL);
}

TEST_F(DispatcherTest, HandleExitCountsDirectCauses) {
  LoadRegs(MVMM_HC_set_if, {1});
  vm_.dispatcher.HandleExit(vm_.env);
  LoadRegs(MVMM_HC_set_if, {0});
  vm_.dispatcher.HandleExit(vm_.env);
  EXPECT_EQ(vm_.cause(Cause::kIfSet).exits, 1u);
  EXPECT_EQ(vm_.cause(Cause::kIfClear).exits, 1u);
  EXPECT_EQ(vm_.stats.hc_exits[MVMM_HC_set_if], 2u);
}

}  // namespace
}  // namespace minivmm

namespace minivmm {
namespace {

TEST(RefusalNotesTest, OneLinePerHypercallAndReason) {
  RefusalNotes notes;
  static constexpr char kBadCmd[] = "unknown cmd";
  static constexpr char kTooBig[] = "count above the maximum";
  notes.Note(MVMM_HC_console_io, "console_io", -MVMM_EINVAL, kBadCmd);
  notes.Note(MVMM_HC_console_io, "console_io", -MVMM_EINVAL, kBadCmd);
  notes.Note(MVMM_HC_console_io, "console_io", -MVMM_E2BIG, kTooBig);
  notes.Note(MVMM_HC_sched_op, "sched_op", -MVMM_EINVAL, kBadCmd);
  notes.Note(100, "", -MVMM_ENOSYS, kBadCmd);
  for (uint64_t nr = 101; nr < 10000; ++nr) notes.Note(nr, "", -MVMM_ENOSYS, kBadCmd);
  ASSERT_EQ(notes.lines().size(), 4u);  // a guest cannot grow the notes
  EXPECT_NE(notes.lines()[0].find("-EINVAL"), std::string::npos) << notes.lines()[0];
  EXPECT_NE(notes.lines()[3].find("nr100"), std::string::npos) << notes.lines()[3];
  EXPECT_NE(notes.lines()[0].find("console_io"), std::string::npos);
  EXPECT_NE(notes.lines()[0].find("unknown cmd"), std::string::npos);
  EXPECT_NE(notes.lines()[2].find("sched_op"), std::string::npos);
}

// An embedder's handler: its status becomes the errno, its message is not
// passed on (the refusal says whose handler refused).
TEST(DispatcherUserHandlerTest, StatusBecomesErrnoWithAFixedReason) {
  testing::CheckedVm vm;
  ASSERT_TRUE(vm.dispatcher
                  .Register(70, "probe",
                            [](HypercallEnv&, const HypercallArgs&) -> absl::StatusOr<uint64_t> {
                              return absl::PermissionDeniedError("formatted 12345");
                            })
                  .ok());
  const HypercallResult r = vm.dispatcher.Dispatch(vm.env, 70, {}, /*direct=*/true);
  EXPECT_EQ(r.value, -MVMM_EPERM);
  ASSERT_NE(r.refusal, nullptr);
  EXPECT_EQ(std::string(r.refusal).find("12345"), std::string::npos);
  EXPECT_EQ(vm.stats.hc_errors[70], 1u);
}

}  // namespace
}  // namespace minivmm
