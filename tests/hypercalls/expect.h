// The gtest layer over testing::FakeVm for the hypercall tests: every direct
// call also EXPECTs the contract of HypercallResult (a refusal reason exactly
// when the call was refused). Nothing else: the fake is tests/common/fake_vm.h.
#ifndef MINIVMM_TESTS_HYPERCALLS_EXPECT_H_
#define MINIVMM_TESTS_HYPERCALLS_EXPECT_H_

#include <gtest/gtest.h>

#include <cstdint>

#include "tests/common/fake_vm.h"
#include "tests/hypercalls/abi_row.h"

namespace minivmm::testing {

struct CheckedVm : FakeVm {
  using FakeVm::FakeVm;

  HypercallResult Result(uint64_t nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0,
                         uint64_t a3 = 0, uint64_t a4 = 0) {
    const HypercallResult result = FakeVm::Result(nr, a0, a1, a2, a3, a4);
    EXPECT_TRUE(RefusalMatches(result))
        << "hypercall " << nr << " returned " << result.value << " with refusal "
        << (result.refusal != nullptr ? result.refusal : "(null)");
    return result;
  }
  int64_t Call(uint64_t nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0,
               uint64_t a4 = 0) {
    return Result(nr, a0, a1, a2, a3, a4).value;
  }
};

}  // namespace minivmm::testing

#endif  // MINIVMM_TESTS_HYPERCALLS_EXPECT_H_
