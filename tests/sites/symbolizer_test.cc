#include "minivmm/symbolizer.h"

#include <elf.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "elf_builder.h"
#include "gtest/gtest.h"

namespace minivmm {
namespace {

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// The value of symbol `name` in the ELF64 `image`, by reading its symbol
// table by hand (so the test does not trust the code it tests).
std::optional<uint64_t> SymbolValue(const std::vector<uint8_t>& image, const std::string& name) {
  Elf64_Ehdr eh;
  if (image.size() < sizeof eh) return std::nullopt;
  std::memcpy(&eh, image.data(), sizeof eh);
  auto section = [&](size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, image.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
    return sh;
  };
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr symtab = section(i);
    if (symtab.sh_type != SHT_SYMTAB) continue;
    const Elf64_Shdr strtab = section(symtab.sh_link);
    for (size_t at = 0; at + sizeof(Elf64_Sym) <= symtab.sh_size; at += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, image.data() + symtab.sh_offset + at, sizeof sym);
      const char* sym_name =
          reinterpret_cast<const char*>(image.data() + strtab.sh_offset + sym.st_name);
      if (name == sym_name) return sym.st_value;
    }
  }
  return std::nullopt;
}

// A file of `bytes` in the test's temporary directory.
std::string WriteTemp(const std::string& name, const std::vector<uint8_t>& bytes) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/symbolizer_test_" +
                     std::to_string(getpid()) + "_" + name;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return path;
}

TEST(SymbolizerTest, NamesAGuestFunctionWithItsFileAndLine) {
  const std::optional<uint64_t> at =
      SymbolValue(ReadBytes(MINIVMM_GUEST_ELF), "_ZN5guest14HypercallOrDieEmmmmmm");
  ASSERT_TRUE(at.has_value()) << "the guest ELF has no HypercallOrDie";
  absl::StatusOr<std::unique_ptr<Symbolizer>> s = Symbolizer::Open(MINIVMM_GUEST_ELF);
  ASSERT_TRUE(s.ok()) << s.status();
  const std::vector<SourceFrame> frames = (*s)->Lookup(*at);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().function, "HypercallOrDie");
  EXPECT_FALSE(frames.back().inlined);
  EXPECT_EQ(frames.back().file, "hypercall.cc");
  EXPECT_GT(frames.back().line, 0);
}

TEST(SymbolizerTest, NamesTheInlinedCallsInsideAFunction) {
  // Hypercall's `out` is RawHypercall (hypercall.h) inlined into Hypercall
  // (hypercall.cc): some address of Hypercall (or of the part GCC split
  // out of it) is RawHypercall's.
  const std::vector<uint8_t> image = ReadBytes(MINIVMM_GUEST_ELF);
  std::optional<uint64_t> at = SymbolValue(image, "_ZN5guest9HypercallEmmmmmm.part.0");
  if (!at) at = SymbolValue(image, "_ZN5guest9HypercallEmmmmmm");
  ASSERT_TRUE(at.has_value());
  absl::StatusOr<std::unique_ptr<Symbolizer>> s = Symbolizer::Open(MINIVMM_GUEST_ELF);
  ASSERT_TRUE(s.ok()) << s.status();
  bool found = false;
  for (uint64_t pc = *at; pc < *at + 512 && !found; ++pc) {
    const std::vector<SourceFrame> frames = (*s)->Lookup(pc);
    if (frames.size() == 2 && frames[0].function == "RawHypercall") {
      found = true;
      EXPECT_TRUE(frames[0].inlined);
      EXPECT_EQ(frames[0].file, "hypercall.h");
      EXPECT_EQ(frames[1].function, "Hypercall");
      EXPECT_EQ(frames[1].file, "hypercall.cc");
      EXPECT_FALSE(frames[1].inlined);
    }
  }
  EXPECT_TRUE(found) << "no address of Hypercall is RawHypercall inlined";
}

TEST(SymbolizerTest, AStrippedGuestNamesNothing) {
  const std::optional<uint64_t> at =
      SymbolValue(ReadBytes(MINIVMM_GUEST_ELF), "_ZN5guest14HypercallOrDieEmmmmmm");
  ASSERT_TRUE(at.has_value());
  absl::StatusOr<std::unique_ptr<Symbolizer>> s = Symbolizer::Open(MINIVMM_STRIPPED_GUEST_ELF);
  ASSERT_TRUE(s.ok()) << s.status();
  const std::vector<SourceFrame> frames = (*s)->Lookup(*at);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "");
  EXPECT_EQ(frames[0].file, "");
  EXPECT_EQ(frames[0].line, 0);
}

TEST(SymbolizerTest, AnElfWithoutSectionsNamesNothing) {
  elftest::ElfBuilder b;
  b.Load(elftest::kBase, std::vector<uint8_t>(64, 0x90), 64);
  const std::string path = WriteTemp("nosections.elf", b.Build());
  absl::StatusOr<std::unique_ptr<Symbolizer>> s = Symbolizer::Open(path);
  ASSERT_TRUE(s.ok()) << s.status();
  const std::vector<SourceFrame> frames = (*s)->Lookup(elftest::kBase + 8);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "");
  unlink(path.c_str());
}

TEST(SymbolizerTest, ATruncatedGuestNamesWhatItCanWithoutCrashing) {
  const std::optional<uint64_t> at =
      SymbolValue(ReadBytes(MINIVMM_GUEST_ELF), "_ZN5guest14HypercallOrDieEmmmmmm");
  ASSERT_TRUE(at.has_value());
  std::vector<uint8_t> image = ReadBytes(MINIVMM_GUEST_ELF);
  image.resize(image.size() / 2);  // the section headers, at the end, are gone
  const std::string path = WriteTemp("truncated.elf", image);
  absl::StatusOr<std::unique_ptr<Symbolizer>> s = Symbolizer::Open(path);
  ASSERT_TRUE(s.ok()) << s.status();
  const std::vector<SourceFrame> frames = (*s)->Lookup(*at);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "");
  unlink(path.c_str());
}

TEST(SymbolizerTest, NotAnElfIsInvalidArgument) {
  const std::string path = WriteTemp("text.elf", std::vector<uint8_t>(100, 'x'));
  EXPECT_EQ(Symbolizer::Open(path).status().code(), absl::StatusCode::kInvalidArgument);
  unlink(path.c_str());
}

TEST(SymbolizerTest, AMissingFileIsNotFound) {
  EXPECT_EQ(Symbolizer::Open("/nonexistent/guest.elf").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace minivmm
