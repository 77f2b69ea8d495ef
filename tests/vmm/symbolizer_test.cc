#include "minivmm/symbolizer.h"

#include <dwarf.h>
#include <elf.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/vmm/elf_builder.h"

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

// The ELF at `path` opens and names nothing at kBase + 8 (one frame with an
// empty function); then the file is removed.
void ExpectOneUnnamedFrameAndRemove(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Symbolizer>> s = Symbolizer::Open(path);
  ASSERT_TRUE(s.ok()) << s.status();
  const std::vector<SourceFrame> frames = (*s)->Lookup(elftest::kBase + 8);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "");
  unlink(path.c_str());
}

// An ELF64 of section headers only: `sections` (name, contents) after the
// null section, then .shstrtab.
std::vector<uint8_t> ElfWithSections(
    const std::vector<std::pair<std::string, std::vector<uint8_t>>>& sections) {
  std::vector<uint8_t> file(sizeof(Elf64_Ehdr));
  std::vector<Elf64_Shdr> headers(1);
  std::vector<uint8_t> names(1);
  auto add = [&](const std::string& name, const std::vector<uint8_t>& bytes, uint32_t type) {
    Elf64_Shdr sh{};
    sh.sh_name = static_cast<uint32_t>(names.size());
    names.insert(names.end(), name.c_str(), name.c_str() + name.size() + 1);
    sh.sh_type = type;
    sh.sh_offset = file.size();
    sh.sh_size = bytes.size();
    sh.sh_addralign = 1;
    file.insert(file.end(), bytes.begin(), bytes.end());
    headers.push_back(sh);
  };
  for (const auto& [name, bytes] : sections) add(name, bytes, SHT_PROGBITS);
  add(".shstrtab", names, SHT_STRTAB);  // add() takes the name before the bytes: it names itself
  while (file.size() % 8) file.push_back(0);
  elftest::ElfBuilder b;
  Elf64_Ehdr& eh = b.header();
  eh.e_shoff = file.size();
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = static_cast<uint16_t>(headers.size());
  eh.e_shstrndx = static_cast<uint16_t>(headers.size() - 1);
  std::memcpy(file.data(), &eh, sizeof eh);
  const auto* raw = reinterpret_cast<const uint8_t*>(headers.data());
  file.insert(file.end(), raw, raw + headers.size() * sizeof(Elf64_Shdr));
  return file;
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
  ExpectOneUnnamedFrameAndRemove(path);
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

// fuzz/regressions/symbolizer/sibling_into_own_children: structs nested 64
// deep, each one's DW_AT_sibling its own first child (libdw only checks that
// a sibling lies further on), so each level was walked twice as often as the
// one above it: 2^64 times at the bottom. Each DIE is now visited once.
TEST(SymbolizerTest, ASiblingInsideItsOwnChildrenIsWalkedOnce) {
  constexpr int kLevels = 64;
  auto put = [](std::vector<uint8_t>& v, uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i)  // little-endian, zero past the value's 8 bytes
      v.push_back(i < 8 ? static_cast<uint8_t>(value >> (8 * i)) : 0);
  };
  // Abbrev 1: a compile unit [low_pc, low_pc + high_pc); 2: a struct with
  // a sibling. Each: code, tag, has children, (attribute, form)..., 0, 0.
  std::vector<uint8_t> abbrev = {1, DW_TAG_compile_unit, DW_CHILDREN_yes};
  abbrev.insert(abbrev.end(), {DW_AT_low_pc, DW_FORM_addr, DW_AT_high_pc, DW_FORM_data8, 0, 0});
  abbrev.insert(abbrev.end(), {2, DW_TAG_structure_type, DW_CHILDREN_yes});
  abbrev.insert(abbrev.end(), {DW_AT_sibling, DW_FORM_ref4, 0, 0, 0});  // 0: no more abbrevs
  std::vector<uint8_t> info;
  put(info, 0, 4);  // unit length, set below
  put(info, 4, 2);  // DWARF 4
  put(info, 0, 4);  // abbrev offset
  put(info, 8, 1);  // address size
  info.push_back(1);
  put(info, elftest::kBase, 8);
  put(info, 0x1000, 8);
  for (int i = 0; i < kLevels; ++i) {
    info.push_back(2);
    put(info, info.size() + 4, 4);  // the next struct: this one's first child
  }
  info.insert(info.end(), kLevels + 1, 0);  // ends every struct's children, then the unit's
  const uint32_t length = static_cast<uint32_t>(info.size() - 4);
  std::memcpy(info.data(), &length, 4);
  std::vector<uint8_t> aranges;
  put(aranges, 44, 4);  // unit length
  put(aranges, 2, 2);   // version
  put(aranges, 0, 4);   // the unit's offset
  put(aranges, 8, 1);   // address size
  put(aranges, 0, 5);   // segment size, padding to 16
  put(aranges, elftest::kBase, 8);
  put(aranges, 0x1000, 8);
  put(aranges, 0, 16);
  const std::string path = WriteTemp("nested.elf", ElfWithSections({{".debug_abbrev", abbrev},
                                                                    {".debug_info", info},
                                                                    {".debug_aranges", aranges}}));
  ExpectOneUnnamedFrameAndRemove(path);
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
