// The host probe's cache file as the CLI reads it (cli/probe_cache.h), on
// made-up files: what it kept is read back, and every kind of bad file is a
// miss. tests/cli/host_probe_test.cc shows a miss probed again and
// rewritten by `minivmm run`.
#include "cli/probe_cache.h"

#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace minivmm::cli {
namespace {

using nlohmann::json;

class ProbeCacheTest : public ::testing::Test {
 protected:
  // `text` as the cache file; its path.
  std::string File(const std::string& text) {
    std::ofstream(path_) << text;
    return path_;
  }
  // A probe that decided all three answers.
  static HostBehaviour Measured() {
    HostBehaviour b;
    b.ring0_emulated = {true, "the emulator ran the loop"};
    b.ring3_nm = {false, "no #NM from ring 3"};
    b.vmcall_in_kernel = {std::nullopt, "undecided"};
    b.loop_insns = 20001;
    b.insn_emulation = 143207;
    b.vmcall_wait = absl::Milliseconds(2831);
    b.elapsed = absl::Milliseconds(3671);
    b.runs = 3;
    return b;
  }

  const std::string path_ = ::testing::TempDir() + "/probe_cache_test.json";
};

TEST_F(ProbeCacheTest, WhatWasKeptForTheKeyIsReadBack) {
  const HostBehaviour kept = Measured();
  const std::optional<HostBehaviour> read =
      ReadCachedBehaviour(File(CacheFileText("this host", kept)), "this host");
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->ring0_emulated.value, kept.ring0_emulated.value);
  EXPECT_EQ(read->ring3_nm.value, kept.ring3_nm.value);
  EXPECT_EQ(read->vmcall_in_kernel.value, kept.vmcall_in_kernel.value);
  EXPECT_EQ(read->ring3_nm.evidence, kept.ring3_nm.evidence);
  EXPECT_EQ(read->insn_emulation, kept.insn_emulation);
  EXPECT_EQ(read->vmcall_rax, kept.vmcall_rax);
  EXPECT_EQ(read->vmcall_wait, kept.vmcall_wait);
  EXPECT_EQ(read->runs, kept.runs);
  EXPECT_EQ(BehaviourToJson(*read), BehaviourToJson(kept));
}

TEST_F(ProbeCacheTest, AMissingForeignOrMalformedFileIsAMiss) {
  EXPECT_FALSE(ReadCachedBehaviour(path_ + ".absent", "this host").has_value());
  const json good = json::parse(CacheFileText("this host", Measured()));
  json other_version = good;
  other_version["version"] = good["version"].get<int>() + 1;
  json no_behaviour = good;
  no_behaviour.erase("behaviour");
  json bad_answer = good;
  bad_answer["behaviour"]["ring3_nm"] = 7;
  json no_evidence = good;
  no_evidence["behaviour"]["evidence"].erase("ring0_emulated");
  json bad_count = good;
  bad_count["behaviour"]["runs"] = "three";
  for (const std::string& text :
       {std::string("not json"), std::string(""), json::array().dump(),
        CacheFileText("another host", Measured()), other_version.dump(), no_behaviour.dump(),
        bad_answer.dump(), no_evidence.dump(), bad_count.dump()}) {
    EXPECT_FALSE(ReadCachedBehaviour(File(text), "this host").has_value()) << text;
  }
  // The file itself was good: only those changes made it a miss.
  EXPECT_TRUE(ReadCachedBehaviour(File(good.dump()), "this host").has_value());
}

}  // namespace
}  // namespace minivmm::cli
