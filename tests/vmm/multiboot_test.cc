#include "vmm/boot/multiboot.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/vmm/elf_builder.h"

namespace minivmm {
namespace {

using ::minivmm::elftest::EditHeader;
using ::minivmm::elftest::EditPhdr;
using ::minivmm::elftest::Elf32Builder;
using ::minivmm::elftest::ElfBuilder;
using ::minivmm::elftest::kBase;
using ::testing::HasSubstr;

constexpr uint64_t kMbRamSize = 4 << 20;
constexpr uint8_t kMbFill = 0xAA;  // what RAM holds before a load
constexpr uint32_t kAoutFlags = kMultibootFlagPageAlign | kMultibootFlagAddresses;

void PutLe32(std::vector<uint8_t>& bytes, uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A Multiboot header with `flags`, its addresses when given.
std::vector<uint8_t> HeaderBytes(uint32_t flags, std::optional<MultibootAddresses> a = {}) {
  std::vector<uint8_t> bytes;
  PutLe32(bytes, kMultibootHeaderMagic);
  PutLe32(bytes, flags);
  PutLe32(bytes, -(kMultibootHeaderMagic + flags));
  if (a) {
    for (uint32_t v :
         {a->header_addr, a->load_addr, a->load_end_addr, a->bss_end_addr, a->entry_addr}) {
      PutLe32(bytes, v);
    }
  }
  return bytes;
}

// `header` at `offset` in a zero-filled file of offset + header bytes.
std::vector<uint8_t> HeaderAt(uint64_t offset, std::vector<uint8_t> header) {
  std::vector<uint8_t> file(offset);
  file.insert(file.end(), header.begin(), header.end());
  return file;
}

// Segment bytes: the header, then two instructions (nop; hlt).
std::vector<uint8_t> CodeWithHeader() {
  std::vector<uint8_t> code = HeaderBytes(kMultibootFlagPageAlign | kMultibootFlagMemoryInfo);
  code.insert(code.end(), {0x90, 0xF4});
  return code;
}

// An ELF image with two PT_LOADs: code with bss at 1 MiB, data at 1 MiB + 8 KiB.
template <typename Builder>
Builder TwoSegments() {
  Builder b;
  b.header().e_entry = kBase + 12;
  b.Load(kBase, CodeWithHeader(), 0x100);
  b.Load(kBase + 0x2000, {1, 2, 3}, 0x10, PF_R | PF_W);
  return b;
}

// --- the header ---

TEST(MultibootHeaderTest, FoundAtOffsetZero) {
  absl::StatusOr<MultibootHeader> header = FindMultibootHeader(HeaderBytes(0));
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->offset, 0);
  EXPECT_EQ(header->flags, 0);
  EXPECT_FALSE(header->addresses.has_value());
}

TEST(MultibootHeaderTest, FoundAtLastAlignedOffsetInSearchArea) {
  absl::StatusOr<MultibootHeader> header =
      FindMultibootHeader(HeaderAt(8188, HeaderBytes(kMultibootFlagMemoryInfo)));
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->offset, 8188);
  EXPECT_EQ(header->flags, kMultibootFlagMemoryInfo);
}

TEST(MultibootHeaderTest, NotFoundBeyondSearchArea) {
  absl::Status status = FindMultibootHeader(HeaderAt(8192, HeaderBytes(0))).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("no header"));
}

TEST(MultibootHeaderTest, NotFoundAtUnalignedOffset) {
  EXPECT_EQ(FindMultibootHeader(HeaderAt(2, HeaderBytes(0))).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MultibootHeaderTest, BadChecksumIsRefused) {
  std::vector<uint8_t> file = HeaderBytes(0);
  file[8] ^= 1;
  absl::Status status = FindMultibootHeader(file).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("checksum"));
}

TEST(MultibootHeaderTest, HeaderCutByFileEndIsRefused) {
  std::vector<uint8_t> file = HeaderBytes(0);
  file.resize(8);
  absl::Status status = FindMultibootHeader(file).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("flags and checksum run past the file end"));
}

TEST(MultibootHeaderTest, AddressesCutByFileEndAreRefused) {
  std::vector<uint8_t> file = HeaderBytes(kMultibootFlagAddresses, MultibootAddresses{});
  file.resize(kMultibootAddressesHeaderSize - 1);
  absl::Status status = FindMultibootHeader(file).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("addresses run past the file end"));
}

TEST(MultibootHeaderTest, VideoModeFlagIsRefused) {
  absl::Status status = FindMultibootHeader(HeaderBytes(kMultibootFlagVideo)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("bit 2"));
}

TEST(MultibootHeaderTest, UnknownRequiredFlagIsRefused) {
  absl::Status status = FindMultibootHeader(HeaderBytes(1u << 15)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("0x8000"));
}

TEST(MultibootHeaderTest, ReadsAddresses) {
  const MultibootAddresses a{0x100010, 0x100000, 0x100100, 0x100200, 0x100020};
  absl::StatusOr<MultibootHeader> header =
      FindMultibootHeader(HeaderBytes(kMultibootFlagAddresses | (1u << 20), a));
  ASSERT_TRUE(header.ok()) << header.status();
  ASSERT_TRUE(header->addresses.has_value());
  EXPECT_EQ(header->addresses->header_addr, 0x100010);
  EXPECT_EQ(header->addresses->load_addr, 0x100000);
  EXPECT_EQ(header->addresses->load_end_addr, 0x100100);
  EXPECT_EQ(header->addresses->bss_end_addr, 0x100200);
  EXPECT_EQ(header->addresses->entry_addr, 0x100020);
}

// --- loading ---

class MultibootLoadTest : public ::testing::Test {
 protected:
  MultibootLoadTest() : ram_(kMbRamSize, kMbFill), memory_(ram_) {}

  std::vector<uint8_t> Ram(uint64_t gpa, uint64_t len) const {
    return std::vector<uint8_t>(ram_.begin() + gpa, ram_.begin() + gpa + len);
  }

  // Loads `file`, which must be refused with `code` and a message holding
  // `what`, and checks that RAM is unchanged byte for byte.
  void ExpectRefused(const std::vector<uint8_t>& file, absl::StatusCode code,
                     const std::string& what) {
    const std::vector<uint8_t> before = ram_;
    absl::Status status = LoadMultiboot(file, memory_).status();
    EXPECT_EQ(status.code(), code) << status;
    EXPECT_THAT(status.message(), HasSubstr(what));
    EXPECT_TRUE(ram_ == before) << "guest memory changed";
  }

  void ExpectLoadsTwoSegments(const std::vector<uint8_t>& file) {
    absl::StatusOr<MultibootImage> image = LoadMultiboot(file, memory_);
    ASSERT_TRUE(image.ok()) << image.status();
    EXPECT_EQ(image->entry, kBase + 12);
    EXPECT_EQ(image->lowest_gpa, kBase);
    EXPECT_EQ(image->end_gpa, kBase + 0x3000);
    EXPECT_EQ(image->header.flags, kMultibootFlagPageAlign | kMultibootFlagMemoryInfo);
    EXPECT_EQ(Ram(kBase, 14), CodeWithHeader());
    EXPECT_EQ(Ram(kBase + 14, 0x100 - 14), std::vector<uint8_t>(0x100 - 14, 0));  // bss
    EXPECT_EQ(ram_[kBase + 0x100], kMbFill);
    EXPECT_EQ(Ram(kBase + 0x2000, 0x11),
              (std::vector<uint8_t>{1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, kMbFill}));
  }

  std::vector<uint8_t> ram_;
  GuestMemory memory_;
};

TEST_F(MultibootLoadTest, Elf32LoadsBothSegmentsAtPaddr) {
  ExpectLoadsTwoSegments(TwoSegments<Elf32Builder>().Build());
}

TEST_F(MultibootLoadTest, Elf64LoadsBothSegmentsAtPaddr) {
  ExpectLoadsTwoSegments(TwoSegments<ElfBuilder>().Build());
}

TEST_F(MultibootLoadTest, EntryFollowsSegmentTranslation) {
  std::vector<uint8_t> file = TwoSegments<Elf32Builder>().Build();
  EditPhdr<Elf32_Phdr>(file, 0, [](Elf32_Phdr& ph) { ph.p_vaddr = 0xC0000000; });
  EditHeader<Elf32_Ehdr>(file, [](Elf32_Ehdr& h) { h.e_entry = 0xC000000C; });
  absl::StatusOr<MultibootImage> image = LoadMultiboot(file, memory_);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->entry, kBase + 12);
}

TEST_F(MultibootLoadTest, ElfWithoutHeaderIsRefused) {
  Elf32Builder b;
  b.Load(kBase, {0x90, 0xF4}, 2);
  ExpectRefused(b.Build(), absl::StatusCode::kInvalidArgument, "no header");
}

TEST_F(MultibootLoadTest, TruncatedElfHeaderIsRefused) {
  std::vector<uint8_t> file = TwoSegments<Elf32Builder>().Build();
  file.resize(sizeof(Elf32_Ehdr) - 1);
  ExpectRefused(file, absl::StatusCode::kInvalidArgument, "shorter than the ELF32 header");
}

TEST_F(MultibootLoadTest, ProgramHeadersOutsideFileAreRefused) {
  std::vector<uint8_t> file = TwoSegments<Elf32Builder>().Build();
  EditHeader<Elf32_Ehdr>(file, [&](Elf32_Ehdr& h) { h.e_phoff = file.size() - 8; });
  ExpectRefused(file, absl::StatusCode::kInvalidArgument, "e_phoff");
}

TEST_F(MultibootLoadTest, SegmentPastFileEndIsRefused) {
  std::vector<uint8_t> file = TwoSegments<Elf32Builder>().Build();
  EditPhdr<Elf32_Phdr>(file, 1, [](Elf32_Phdr& ph) { ph.p_filesz = ph.p_memsz; });
  ExpectRefused(file, absl::StatusCode::kInvalidArgument,
                "PT_LOAD 1: p_offset 0x88 + p_filesz 0x10 runs past the file end");
}

TEST_F(MultibootLoadTest, FileszAboveMemszIsRefused) {
  std::vector<uint8_t> file = TwoSegments<Elf32Builder>().Build();
  EditPhdr<Elf32_Phdr>(file, 1, [](Elf32_Phdr& ph) { ph.p_memsz = 2; });
  ExpectRefused(file, absl::StatusCode::kInvalidArgument,
                "PT_LOAD 1: p_filesz 0x3 is larger than p_memsz 0x2");
}

TEST_F(MultibootLoadTest, OverlappingSegmentsAreRefused) {
  std::vector<uint8_t> file = TwoSegments<Elf32Builder>().Build();
  EditPhdr<Elf32_Phdr>(file, 1, [](Elf32_Phdr& ph) { ph.p_paddr = kBase + 0xFF; });
  ExpectRefused(file, absl::StatusCode::kInvalidArgument,
                "PT_LOAD 0 and PT_LOAD 1: physical ranges overlap");
}

TEST_F(MultibootLoadTest, SegmentBelowOneMebibyteOutsideLowRamIsRefused) {
  std::vector<uint8_t> file = TwoSegments<Elf32Builder>().Build();
  EditPhdr<Elf32_Phdr>(file, 1, [](Elf32_Phdr& ph) { ph.p_paddr = 0xFF000; });
  ExpectRefused(file, absl::StatusCode::kInvalidArgument,
                "PT_LOAD 1: [p_paddr 0xff000, + 0x10) is below 1 MiB (0x100000) and not inside "
                "low RAM [0x1000, 0x9fc00)");
}

// As QEMU's loader, an image may load into low RAM (kvm-unit-tests'
// realmode.flat at 0x8000): wholly inside [0x1000, 0x9fc00), never across
// its ends.
TEST_F(MultibootLoadTest, ImageInLowRamLoadsAndSaysWhereItEnds) {
  Elf32Builder b;
  b.header().e_entry = 0x8000 + 12;
  b.Load(0x8000, CodeWithHeader(), 0x100);
  b.Load(0xb000, {1, 2, 3}, 0x2a30, PF_R | PF_W);
  absl::StatusOr<MultibootImage> image = LoadMultiboot(b.Build(), memory_);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->entry, 0x8000u + 12);
  EXPECT_EQ(image->lowest_gpa, 0x8000u);
  EXPECT_EQ(image->low_end_gpa, 0xe000u);
  EXPECT_EQ(Ram(0xb000, 4), (std::vector<uint8_t>{1, 2, 3, 0}));
}

TEST_F(MultibootLoadTest, SegmentAcrossLowRamsEndsIsRefused) {
  for (uint64_t gpa : {uint64_t{0x800}, uint64_t{0x9fc00 - 8}}) {
    std::vector<uint8_t> file = TwoSegments<Elf32Builder>().Build();
    EditPhdr<Elf32_Phdr>(file, 1, [gpa](Elf32_Phdr& ph) { ph.p_paddr = static_cast<uint32_t>(gpa); });
    ExpectRefused(file, absl::StatusCode::kInvalidArgument, "not inside low RAM");
  }
}

TEST_F(MultibootLoadTest, SegmentPastRamIsOutOfRange) {
  std::vector<uint8_t> file = TwoSegments<Elf32Builder>().Build();
  EditPhdr<Elf32_Phdr>(file, 1, [](Elf32_Phdr& ph) { ph.p_paddr = kMbRamSize - 8; });
  ExpectRefused(file, absl::StatusCode::kOutOfRange,
                "PT_LOAD 1: [p_paddr 0x3ffff8, + 0x10) is outside guest RAM");
}

TEST_F(MultibootLoadTest, SegmentAboveFourGibibytesIsRefused) {
  std::vector<uint8_t> file = TwoSegments<ElfBuilder>().Build();
  EditPhdr(file, 1, [](Elf64_Phdr& ph) { ph.p_paddr = 0xFFFFFFF8; });
  ExpectRefused(file, absl::StatusCode::kInvalidArgument,
                "PT_LOAD 1: [p_paddr 0xfffffff8, + 0x10) ends above 4 GiB");
}

TEST_F(MultibootLoadTest, EntryOutsideSegmentsIsRefused) {
  std::vector<uint8_t> file = TwoSegments<Elf32Builder>().Build();
  EditHeader<Elf32_Ehdr>(file, [](Elf32_Ehdr& h) { h.e_entry = kBase + 0x1000; });
  ExpectRefused(file, absl::StatusCode::kInvalidArgument,
                "e_entry 0x101000 is not inside any PT_LOAD");
}

TEST_F(MultibootLoadTest, NoLoadSegmentIsRefused) {
  std::vector<uint8_t> file = TwoSegments<Elf32Builder>().Build();
  for (int i = 0; i < 2; ++i) {
    EditPhdr<Elf32_Phdr>(file, i, [](Elf32_Phdr& ph) { ph.p_type = PT_NOTE; });
  }
  ExpectRefused(file, absl::StatusCode::kInvalidArgument, "no non-empty PT_LOAD");
}

TEST_F(MultibootLoadTest, WrongMachineIsRefused) {
  std::vector<uint8_t> file = TwoSegments<Elf32Builder>().Build();
  EditHeader<Elf32_Ehdr>(file, [](Elf32_Ehdr& h) { h.e_machine = EM_X86_64; });
  ExpectRefused(file, absl::StatusCode::kInvalidArgument, "e_machine is 62, want 3 for ELF32");
}

// --- the a.out kludge (header flag 16) ---

constexpr uint64_t kAoutHeaderOffset = 16;
constexpr uint64_t kAoutFileSize = 64;

// A 64-byte flat image: 16 code bytes, the header at offset 16, filler; to
// load at 1 MiB with bss to 1 MiB + 6 KiB and the entry at 1 MiB + 48.
MultibootAddresses AoutAddresses() {
  return {.header_addr = kBase + kAoutHeaderOffset,
          .load_addr = kBase,
          .load_end_addr = kBase + kAoutFileSize,
          .bss_end_addr = kBase + 0x1800,
          .entry_addr = kBase + 48};
}

std::vector<uint8_t> AoutImage(const MultibootAddresses& a) {
  std::vector<uint8_t> file(kAoutHeaderOffset, 0x90);
  const std::vector<uint8_t> header = HeaderBytes(kAoutFlags, a);
  file.insert(file.end(), header.begin(), header.end());
  file.resize(kAoutFileSize, 0xF4);
  return file;
}

TEST_F(MultibootLoadTest, AoutKludgeLoadsFromHeaderAddresses) {
  const std::vector<uint8_t> file = AoutImage(AoutAddresses());
  absl::StatusOr<MultibootImage> image = LoadMultiboot(file, memory_);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->entry, kBase + 48);
  EXPECT_EQ(image->lowest_gpa, kBase);
  EXPECT_EQ(image->end_gpa, kBase + 0x2000);
  EXPECT_EQ(image->header.offset, kAoutHeaderOffset);
  EXPECT_EQ(Ram(kBase, kAoutFileSize), file);
  EXPECT_EQ(Ram(kBase + kAoutFileSize, 0x1800 - kAoutFileSize),
            std::vector<uint8_t>(0x1800 - kAoutFileSize, 0));
  EXPECT_EQ(ram_[kBase + 0x1800], kMbFill);
  EXPECT_EQ(ram_[kBase - 1], kMbFill);
}

TEST_F(MultibootLoadTest, AoutKludgeStartsAtLoadAddrsFileOffset) {
  MultibootAddresses a = AoutAddresses();
  a.load_addr = kBase + 8;  // the file's first 8 bytes are not loaded
  a.load_end_addr = 0;      // the rest of the file
  a.bss_end_addr = 0;
  const std::vector<uint8_t> file = AoutImage(a);
  absl::StatusOr<MultibootImage> image = LoadMultiboot(file, memory_);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->lowest_gpa, kBase + 8);
  EXPECT_EQ(Ram(kBase + 8, kAoutFileSize - 8), std::vector<uint8_t>(file.begin() + 8, file.end()));
  EXPECT_EQ(ram_[kBase + 7], kMbFill);
  EXPECT_EQ(ram_[kBase + kAoutFileSize], kMbFill);
}

TEST_F(MultibootLoadTest, FlatFileWithoutAddressesIsRefused) {
  ExpectRefused(HeaderAt(16, HeaderBytes(0)), absl::StatusCode::kInvalidArgument,
                "not an ELF file, and the header has no addresses (flag 16)");
}

TEST_F(MultibootLoadTest, AoutHeaderAddrBelowLoadAddrIsRefused) {
  MultibootAddresses a = AoutAddresses();
  a.header_addr = kBase - 4;
  ExpectRefused(AoutImage(a), absl::StatusCode::kInvalidArgument,
                "header_addr 0xffffc is below load_addr 0x100000");
}

TEST_F(MultibootLoadTest, AoutLoadAddrBeforeFileStartIsRefused) {
  MultibootAddresses a = AoutAddresses();
  a.load_addr = kBase - 4;
  ExpectRefused(AoutImage(a), absl::StatusCode::kInvalidArgument,
                "load_addr 0xffffc is 0x14 bytes before header_addr");
}

TEST_F(MultibootLoadTest, AoutLoadEndPastFileIsRefused) {
  MultibootAddresses a = AoutAddresses();
  a.load_end_addr = kBase + kAoutFileSize + 1;
  ExpectRefused(AoutImage(a), absl::StatusCode::kInvalidArgument,
                "load_end_addr 0x100041: 0x41 bytes from file offset 0x0 run past the file end");
}

TEST_F(MultibootLoadTest, AoutLoadEndNotAboveLoadAddrIsRefused) {
  MultibootAddresses a = AoutAddresses();
  a.load_end_addr = kBase;
  ExpectRefused(AoutImage(a), absl::StatusCode::kInvalidArgument,
                "load_end_addr 0x100000 is not above load_addr");
}

TEST_F(MultibootLoadTest, AoutBssEndBelowLoadEndIsRefused) {
  MultibootAddresses a = AoutAddresses();
  a.bss_end_addr = kBase + kAoutFileSize - 1;
  ExpectRefused(AoutImage(a), absl::StatusCode::kInvalidArgument,
                "bss_end_addr 0x10003f is below the loaded end 0x100040");
}

TEST_F(MultibootLoadTest, AoutEntryOutsideImageIsRefused) {
  MultibootAddresses a = AoutAddresses();
  a.entry_addr = kBase + 0x1800;
  ExpectRefused(AoutImage(a), absl::StatusCode::kInvalidArgument, "entry_addr 0x101800 is outside");
}

TEST_F(MultibootLoadTest, AoutBelowOneMebibyteIsRefused) {
  MultibootAddresses a = AoutAddresses();
  a.header_addr -= kBase;
  a.load_addr -= kBase;
  a.load_end_addr -= kBase;
  a.bss_end_addr -= kBase;
  a.entry_addr -= kBase;
  ExpectRefused(AoutImage(a), absl::StatusCode::kInvalidArgument,
                "header: [load_addr 0x0, + 0x");
  ExpectRefused(AoutImage(a), absl::StatusCode::kInvalidArgument,
                "is below 1 MiB (0x100000) and not inside low RAM");
}

TEST_F(MultibootLoadTest, AoutBssPastRamIsOutOfRange) {
  MultibootAddresses a = AoutAddresses();
  a.bss_end_addr = kMbRamSize + 1;
  ExpectRefused(AoutImage(a), absl::StatusCode::kOutOfRange, "outside guest RAM");
}

// --- the information structure ---

constexpr uint64_t kInfoRamSize = 64 << 20;

class MultibootInfoTest : public ::testing::Test {
 protected:
  MultibootInfoTest() : ram_(kInfoRamSize, kMbFill), memory_(ram_) {}

  std::string StringAt(uint32_t gpa) const {
    return std::string(reinterpret_cast<const char*>(ram_.data() + gpa));
  }

  void ExpectRefused(const MultibootInfoRequest& request, absl::StatusCode code,
                     const std::string& what) {
    const std::vector<uint8_t> before = ram_;
    absl::Status status = WriteMultibootInfo(request, memory_).status();
    EXPECT_EQ(status.code(), code) << status;
    EXPECT_THAT(status.message(), HasSubstr(what));
    EXPECT_TRUE(ram_ == before) << "guest memory changed";
  }

  std::vector<uint8_t> ram_;
  GuestMemory memory_;
};

// After an image in low RAM that reaches past 0x9000, the information
// starts at the page after it; one below 0x9000 leaves it where it was.
TEST_F(MultibootInfoTest, StartsAfterAnImageInLowRam) {
  absl::StatusOr<uint32_t> after = WriteMultibootInfo(
      {.cmdline = "realmode.flat", .modules = {}, .after_gpa = kBase, .low_image_end = 0xe000},
      memory_);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, 0xe000u);
  std::optional<MultibootInfo> info = memory_.ReadObj<MultibootInfo>(GuestAddress(*after));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(StringAt(info->cmdline), "realmode.flat");
  EXPECT_GE(info->mmap_addr, 0xe000u);
  absl::StatusOr<uint32_t> before = WriteMultibootInfo(
      {.cmdline = "x.flat", .modules = {}, .after_gpa = kBase, .low_image_end = 0x5000}, memory_);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(*before, kMultibootInfoAreaStart);
  // No room left below 640 KiB after the image.
  ExpectRefused({.cmdline = "x.flat", .modules = {}, .after_gpa = kBase,
                 .low_image_end = kMultibootInfoAreaEnd - 0x10},
                absl::StatusCode::kResourceExhausted, "more than the info area's 0x0");
}

TEST_F(MultibootInfoTest, WritesEveryField) {
  const std::vector<uint8_t> first = {1, 2, 3};
  const std::vector<uint8_t> second = {4, 5, 6, 7, 8};
  const MultibootInfoRequest request{.cmdline = "/images/x.flat -smp 1",
                                     .modules = {{first, "first.bin a=b"}, {second, "second.bin"}},
                                     .after_gpa = kBase + 0x2001};
  absl::StatusOr<uint32_t> ebx = WriteMultibootInfo(request, memory_);
  ASSERT_TRUE(ebx.ok()) << ebx.status();
  EXPECT_EQ(*ebx, kMultibootInfoAreaStart);

  std::optional<MultibootInfo> info = memory_.ReadObj<MultibootInfo>(GuestAddress(*ebx));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->flags, (1u << 0) | (1u << 2) | (1u << 3) | (1u << 6));
  EXPECT_EQ(info->mem_lower, 639);
  EXPECT_EQ(info->mem_upper, 63 * 1024);
  EXPECT_EQ(info->boot_device, 0);
  EXPECT_EQ(StringAt(info->cmdline), "/images/x.flat -smp 1");

  ASSERT_EQ(info->mods_count, 2);
  std::optional<MultibootModuleEntry> mod0 =
      memory_.ReadObj<MultibootModuleEntry>(GuestAddress(info->mods_addr));
  std::optional<MultibootModuleEntry> mod1 = memory_.ReadObj<MultibootModuleEntry>(
      GuestAddress(info->mods_addr + sizeof(MultibootModuleEntry)));
  ASSERT_TRUE(mod0.has_value() && mod1.has_value());
  EXPECT_EQ(mod0->mod_start, kBase + 0x3000);
  EXPECT_EQ(mod0->mod_end, kBase + 0x3003);
  EXPECT_EQ(StringAt(mod0->string), "first.bin a=b");
  EXPECT_EQ(mod1->mod_start, kBase + 0x4000);
  EXPECT_EQ(mod1->mod_end, kBase + 0x4005);
  EXPECT_EQ(StringAt(mod1->string), "second.bin");
  EXPECT_EQ(std::vector<uint8_t>(ram_.begin() + kBase + 0x3000, ram_.begin() + kBase + 0x3004),
            (std::vector<uint8_t>{1, 2, 3, kMbFill}));
  EXPECT_EQ(std::vector<uint8_t>(ram_.begin() + kBase + 0x4000, ram_.begin() + kBase + 0x4005),
            second);

  ASSERT_EQ(info->mmap_length, 4 * sizeof(MultibootMmapEntry));
  struct Expected {
    uint64_t base, length;
    uint32_t type;
  };
  const Expected expected[] = {{0, 0x9FC00, 1},
                               {0x9FC00, 0x400, 2},
                               {0xF0000, 0x10000, 2},
                               {0x100000, kInfoRamSize - 0x100000, 1}};
  for (int i = 0; i < 4; ++i) {
    std::optional<MultibootMmapEntry> e = memory_.ReadObj<MultibootMmapEntry>(
        GuestAddress(info->mmap_addr + i * sizeof(MultibootMmapEntry)));
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->size, 20) << "entry " << i;
    EXPECT_EQ(e->base_addr, expected[i].base) << "entry " << i;
    EXPECT_EQ(e->length, expected[i].length) << "entry " << i;
    EXPECT_EQ(e->type, expected[i].type) << "entry " << i;
  }
}

TEST_F(MultibootInfoTest, NoModulesStillSetsModsFlag) {
  absl::StatusOr<uint32_t> ebx =
      WriteMultibootInfo({.cmdline = "x.flat", .modules = {}, .after_gpa = kBase}, memory_);
  ASSERT_TRUE(ebx.ok()) << ebx.status();
  std::optional<MultibootInfo> info = memory_.ReadObj<MultibootInfo>(GuestAddress(*ebx));
  ASSERT_TRUE(info.has_value());
  EXPECT_TRUE(info->flags & kMultibootInfoMods);
  EXPECT_EQ(info->mods_count, 0);
  EXPECT_GE(info->mods_addr, kMultibootInfoAreaStart);
  EXPECT_LT(info->mods_addr, kMultibootInfoAreaEnd);
  EXPECT_EQ(StringAt(info->cmdline), "x.flat");
}

TEST_F(MultibootInfoTest, CommandLineTooLongForAreaIsResourceExhausted) {
  const MultibootInfoRequest request{
      .cmdline = std::string(kMultibootInfoAreaEnd - kMultibootInfoAreaStart, 'x'),
      .modules = {},
      .after_gpa = kBase};
  ExpectRefused(request, absl::StatusCode::kResourceExhausted, "more than the info area's");
}

TEST_F(MultibootInfoTest, ModulePastRamIsOutOfRange) {
  const std::vector<uint8_t> data(0x2000, 1);
  const MultibootInfoRequest request{
      .cmdline = "x.flat", .modules = {{data, "m"}}, .after_gpa = kInfoRamSize - 0x1000};
  ExpectRefused(request, absl::StatusCode::kOutOfRange, "module 0 (0x2000 bytes at 0x3fff000)");
}

TEST_F(MultibootInfoTest, ModulesBelowOneMebibyteAreRefused) {
  ExpectRefused({.cmdline = "x.flat", .modules = {}, .after_gpa = 0x9000},
                absl::StatusCode::kInvalidArgument, "after_gpa 0x9000");
}

TEST(MultibootInfoSmallRamTest, RamEndingAtOneMebibyteIsRefused) {
  std::vector<uint8_t> ram(kMultibootMinLoadGpa, kMbFill);
  const GuestMemory memory(ram);
  absl::Status status =
      WriteMultibootInfo({.cmdline = "x.flat", .modules = {}, .after_gpa = kBase}, memory).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("ends at or below 1 MiB"));
  EXPECT_EQ(ram, std::vector<uint8_t>(kMultibootMinLoadGpa, kMbFill));
}

}  // namespace
}  // namespace minivmm
