// StackPairing (vmm/ktrace/stack_pairing.h): each exit read from KVM's
// tracepoint paired with the stack the BPF program wrote for it, a dropped
// stack costing its own exit only, and no exit handed over before it can
// be whole.
#include "vmm/ktrace/stack_pairing.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace minivmm {
namespace {

const std::string kCpuid = "cpuid", kIo = "io";

struct Settled {
  std::vector<std::pair<uint64_t, std::vector<uint64_t>>> paired;  // (time, stack)
  std::vector<bool> to_vmm;                                         // of each paired
  std::vector<uint64_t> unstacked;                                  // times
};

Settled Settle(StackPairing& pairing, bool last) {
  Settled out;
  pairing.Settle(
      last,
      [&](const StackPairing::Exit& exit, std::vector<uint64_t> stack) {
        out.paired.emplace_back(exit.time_ns, std::move(stack));
        out.to_vmm.push_back(exit.to_vmm);
      },
      [&](const StackPairing::Exit& exit) { out.unstacked.push_back(exit.time_ns); });
  return out;
}

TEST(StackPairingTest, EachExitGetsTheStackOfTheSameTurn) {
  StackPairing pairing;
  pairing.AddExit({1, &kCpuid, 0x100});
  pairing.AddExit({2, &kIo, 0x200});
  pairing.LastReachedVmm();
  pairing.AddStack({0x100, 0x500, 0x600});
  pairing.AddStack({0x200, 0x700});
  const Settled s = Settle(pairing, /*last=*/true);
  ASSERT_EQ(s.paired.size(), 2u);
  EXPECT_EQ(s.paired[0], (std::pair<uint64_t, std::vector<uint64_t>>{1, {0x100, 0x500, 0x600}}));
  EXPECT_EQ(s.paired[1], (std::pair<uint64_t, std::vector<uint64_t>>{2, {0x200, 0x700}}));
  EXPECT_EQ(s.to_vmm, (std::vector<bool>{false, true}));
  EXPECT_TRUE(s.unstacked.empty());
}

TEST(StackPairingTest, TheLastExitWaitsUntilALaterRecordOrTheEnd) {
  StackPairing pairing;
  pairing.AddExit({1, &kIo, 0x100});
  pairing.AddStack({0x100});
  // It may yet have reached minivmm: not handed over.
  EXPECT_TRUE(Settle(pairing, false).paired.empty());
  pairing.LastReachedVmm();
  pairing.AddExit({2, &kCpuid, 0x200});
  Settled s = Settle(pairing, false);
  ASSERT_EQ(s.paired.size(), 1u);
  EXPECT_EQ(s.paired[0].first, 1u);
  EXPECT_EQ(s.to_vmm, std::vector<bool>{true});
  // Exit 2's stack has not come: at the end it goes unstacked.
  s = Settle(pairing, true);
  EXPECT_TRUE(s.paired.empty());
  EXPECT_EQ(s.unstacked, std::vector<uint64_t>{2});
}

TEST(StackPairingTest, AnExitWhoseStackHasNotComeWaits) {
  StackPairing pairing;
  pairing.AddExit({1, &kCpuid, 0x100});
  pairing.AddExit({2, &kCpuid, 0x100});
  // The tracepoint's records were read before the BPF ring's stacks came.
  EXPECT_TRUE(Settle(pairing, false).paired.empty());
  pairing.AddStack({0x100, 0x1});
  pairing.AddStack({0x100, 0x2});
  const Settled s = Settle(pairing, true);
  ASSERT_EQ(s.paired.size(), 2u);
  EXPECT_EQ(s.paired[0].second, (std::vector<uint64_t>{0x100, 0x1}));
  EXPECT_EQ(s.paired[1].second, (std::vector<uint64_t>{0x100, 0x2}));
}

TEST(StackPairingTest, ADroppedStackCostsItsOwnExitOnly) {
  StackPairing pairing;
  pairing.AddExit({1, &kCpuid, 0x100});
  pairing.AddExit({2, &kIo, 0x200});  // its stack was dropped
  pairing.AddExit({3, &kCpuid, 0x300});
  pairing.AddStack({0x100});
  pairing.AddStack({0x300, 0x9});
  const Settled s = Settle(pairing, true);
  ASSERT_EQ(s.paired.size(), 2u);
  EXPECT_EQ(s.paired[0].first, 1u);
  EXPECT_EQ(s.paired[1], (std::pair<uint64_t, std::vector<uint64_t>>{3, {0x300, 0x9}}));
  EXPECT_EQ(s.unstacked, std::vector<uint64_t>{2});
}

TEST(StackPairingTest, WithNoStacksAtAllEveryExitGoesUnstackedAtTheEnd) {
  StackPairing pairing;
  for (uint64_t t = 1; t <= 3; ++t) pairing.AddExit({t, &kIo, 0x100 * t});
  EXPECT_TRUE(Settle(pairing, false).unstacked.empty());
  EXPECT_EQ(Settle(pairing, true).unstacked, (std::vector<uint64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace minivmm
