// CpuFeaturesSeenOtherwise (vmm/machine/cpuid_probe.h): which of the user's
// CPUID changes the guest would see otherwise than asked, from the
// registers a probe read. The probe itself runs in the whole-VM tests.
#include "vmm/machine/cpuid_probe.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace minivmm {
namespace {

using Seen = std::map<CpuidRegisterAt, uint32_t>;
constexpr CpuidRegisterAt kLeaf1Ecx{1, 0, CpuidRegister::kEcx};
constexpr CpuidRegisterAt kLeaf7Ecx{7, 0, CpuidRegister::kEcx};
constexpr uint32_t kXsave = 1u << 26, kPcid = 1u << 17, kUmip = 1u << 2;

TEST(CpuidProbeTest, ABitClearedButStillSeenIsSaid) {
  const std::vector<CpuFeatureChange> changes = {
      {"xsave", false}, {"pcid", false}, {"umip", false}};
  const Seen seen = {{kLeaf1Ecx, kXsave}, {kLeaf7Ecx, kUmip}};
  EXPECT_EQ(CpuFeaturesSeenOtherwise(changes, seen, {}),
            (std::vector<std::string>{
                "cpu feature -umip: this host's KVM shows it to the guest whatever "
                "KVM_SET_CPUID2 says (CPUID.7:ECX[2] = 1)",
                "cpu feature -xsave: this host's KVM shows it to the guest whatever "
                "KVM_SET_CPUID2 says (CPUID.1:ECX[26] = 1)"}));
}

TEST(CpuidProbeTest, ABitGivenButNotSeenIsSaidUnlessAlreadySaid) {
  const std::vector<CpuFeatureChange> changes = {{"pcid", true}, {"xsave", true}};
  const Seen seen = {{kLeaf1Ecx, 0}};
  EXPECT_EQ(CpuFeaturesSeenOtherwise(changes, seen, {}),
            (std::vector<std::string>{
                "cpu feature +pcid: this host's KVM hides it from the guest whatever "
                "KVM_SET_CPUID2 says (CPUID.1:ECX[17] = 0)",
                "cpu feature +xsave: this host's KVM hides it from the guest whatever "
                "KVM_SET_CPUID2 says (CPUID.1:ECX[26] = 0)"}));
  // A bit KVM does not offer was said by ApplyCpuChoices already.
  const std::vector<std::string> said = {
      "cpu feature +pcid: this host's KVM does not offer it (KVM_GET_SUPPORTED_CPUID); left clear"};
  EXPECT_EQ(CpuFeaturesSeenOtherwise(changes, seen, said).size(), 1u);
}

TEST(CpuidProbeTest, BitsSeenAsAskedAndRegistersNotReadSayNothing) {
  const std::vector<CpuFeatureChange> changes = {{"xsave", true}, {"pcid", false}, {"la57", false}};
  EXPECT_TRUE(CpuFeaturesSeenOtherwise(changes, {{kLeaf1Ecx, kXsave}}, {}).empty());
  EXPECT_TRUE(CpuFeaturesSeenOtherwise({}, {{kLeaf1Ecx, kPcid}}, {}).empty());
}

TEST(CpuidProbeTest, TheLastChangeOfABitIsTheOneJudged) {
  const std::vector<CpuFeatureChange> changes = {{"pcid", true}, {"pcid", false}};
  EXPECT_TRUE(CpuFeaturesSeenOtherwise(changes, {{kLeaf1Ecx, 0}}, {}).empty());
  EXPECT_EQ(CpuFeaturesSeenOtherwise(changes, {{kLeaf1Ecx, kPcid}}, {}).size(), 1u);
}

}  // namespace
}  // namespace minivmm
