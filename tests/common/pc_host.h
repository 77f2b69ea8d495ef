// Where the PC machine may be refused by its host check
// (vmm/machine/pc_host_check.h): only on kvm_pvm, whose emulator cannot
// return from an exception with a protected-mode iret (docs/hosts.md). There a
// test of the machine asserts the refusal line and nothing else; on every
// other KVM the refusal fails the test, and where the check passes on kvm_pvm
// the test asserts everything it asserts elsewhere.
#ifndef MINIVMM_TESTS_COMMON_PC_HOST_H_
#define MINIVMM_TESTS_COMMON_PC_HOST_H_

#include <filesystem>
#include <string_view>

#include "gtest/gtest.h"
#include "vmm/machine/pc_host_check.h"

namespace minivmm::testing {

// kvm_pvm backs /dev/kvm here (as minivmm's own host_info reads it).
inline bool PcRefusalAllowedHere() {
  std::error_code ec;
  return std::filesystem::exists("/sys/module/kvm_pvm", ec);
}

// Whether `text` (a status's message, a command's output) holds the host
// check's refusal; if it does, that must be allowed on this host, and the
// line must say how the probe ended.
inline bool PcRefusedHere(std::string_view text) {
  const size_t at = text.find(kPcNoProtectedModeEvents);
  if (at == std::string_view::npos) return false;
  EXPECT_TRUE(PcRefusalAllowedHere())
      << "the pc machine was refused on a KVM that must run it: " << text;
  EXPECT_NE(text.find(" (a #UD through the guest's IDT and its handler's iret ended in ", at),
            std::string_view::npos)
      << text;
  return true;
}

}  // namespace minivmm::testing

#endif  // MINIVMM_TESTS_COMMON_PC_HOST_H_
