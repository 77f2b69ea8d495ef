#include "vmm/elf/elf_loader.h"

#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/vmm/elf_builder.h"

namespace minivmm {
namespace {

using ::minivmm::elftest::EditHeader;
using ::minivmm::elftest::EditPhdr;
using ::minivmm::elftest::ElfBuilder;
using ::minivmm::elftest::kBase;
using ::testing::HasSubstr;

constexpr uint64_t kRamSize = 4 << 20;
constexpr uint8_t kFill = 0xAA;  // what RAM holds before a load

class ElfLoaderTest : public ::testing::Test {
 protected:
  ElfLoaderTest() : ram_(kRamSize, kFill), memory_(ram_) {}

  // A one-segment image: 4 code bytes at 1 MiB, 16 bytes of memory.
  static ElfBuilder Simple() {
    ElfBuilder b;
    b.Load(kBase, {0x90, 0x90, 0xF4, 0xCC}, 16);
    return b;
  }

  absl::Status LoadStatus(const std::vector<uint8_t>& file) {
    return LoadElf(file, memory_).status();
  }

  std::vector<uint8_t> ram_;
  GuestMemory memory_;
};

// --- valid images ---

TEST_F(ElfLoaderTest, CopiesSegmentBytesToPaddr) {
  ASSERT_TRUE(LoadElf(Simple().Build(), memory_).ok());
  EXPECT_EQ(std::vector<uint8_t>(ram_.begin() + kBase, ram_.begin() + kBase + 4),
            (std::vector<uint8_t>{0x90, 0x90, 0xF4, 0xCC}));
}

TEST_F(ElfLoaderTest, ZeroesBssUpToMemsz) {
  ASSERT_TRUE(LoadElf(Simple().Build(), memory_).ok());
  for (uint64_t i = 4; i < 16; ++i) EXPECT_EQ(ram_[kBase + i], 0) << "byte " << i;
  EXPECT_EQ(ram_[kBase + 16], kFill);  // nothing past p_memsz
  EXPECT_EQ(ram_[kBase - 1], kFill);
}

TEST_F(ElfLoaderTest, ReportsEntryAndPageRoundedRange) {
  ElfBuilder b = Simple();
  b.header().e_entry = kBase + 2;
  b.Load(kBase + 0x3000, {1, 2, 3}, 0x10, PF_R | PF_W);
  absl::StatusOr<LoadedImage> image = LoadElf(b.Build(), memory_);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->entry, kBase + 2);
  EXPECT_EQ(image->entry_gpa, kBase + 2);
  EXPECT_EQ(image->lowest_gpa, kBase);
  EXPECT_EQ(image->end_gpa, kBase + 0x4000);
  EXPECT_FALSE(image->pvh_entry.has_value());
}

TEST_F(ElfLoaderTest, EntryGpaFollowsSegmentTranslation) {
  std::vector<uint8_t> file = Simple().Build();
  EditPhdr(file, 0, [](Elf64_Phdr& ph) { ph.p_vaddr = 0xFFFFFFFF80000000; });
  EditHeader(file, [](Elf64_Ehdr& h) { h.e_entry = 0xFFFFFFFF80000001; });
  absl::StatusOr<LoadedImage> image = LoadElf(file, memory_);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->entry, 0xFFFFFFFF80000001);
  EXPECT_EQ(image->entry_gpa, kBase + 1);
}

TEST_F(ElfLoaderTest, AdjacentSegmentsLoad) {
  ElfBuilder b = Simple();
  b.Load(kBase + 16, {7}, 1, PF_R);
  ASSERT_TRUE(LoadElf(b.Build(), memory_).ok());
  EXPECT_EQ(ram_[kBase + 16], 7);
}

TEST_F(ElfLoaderTest, SegmentEndingAtEndOfRamLoads) {
  ElfBuilder b;
  b.header().e_entry = kRamSize - 1;
  b.Load(kRamSize - 1, {0xF4}, 1);
  absl::StatusOr<LoadedImage> image = LoadElf(b.Build(), memory_);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->end_gpa, kRamSize);
}

TEST_F(ElfLoaderTest, FindsPvhEntryNote) {
  ElfBuilder b = Simple();
  b.Note("GNU", 3, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20});
  b.Note("Xen", 18, {0x08, 0x00, 0x10, 0x00});
  absl::StatusOr<LoadedImage> image = LoadElf(b.Build(), memory_);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->pvh_entry, std::optional<uint64_t>(kBase + 8));
}

TEST_F(ElfLoaderTest, OtherXenNotesAreNotPvhEntry) {
  ElfBuilder b = Simple();
  b.Note("Xen", 6, {'l', 'i', 'n', 'u', 'x', 0, 0, 0});  // XEN_ELFNOTE_GUEST_OS
  absl::StatusOr<LoadedImage> image = LoadElf(b.Build(), memory_);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_FALSE(image->pvh_entry.has_value());
}

TEST_F(ElfLoaderTest, EmptyLoadSegmentIsIgnored) {
  ElfBuilder b = Simple();
  b.Load(0, {}, 0, PF_R);  // a placement that would be refused if it loaded anything
  EXPECT_TRUE(LoadElf(b.Build(), memory_).ok());
}

// --- malformed images: InvalidArgument ---

TEST_F(ElfLoaderTest, EmptyFileIsRefused) {
  EXPECT_EQ(LoadStatus({}).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ElfLoaderTest, TruncatedHeaderIsRefused) {
  std::vector<uint8_t> file = Simple().Build();
  file.resize(sizeof(Elf64_Ehdr) - 1);
  EXPECT_EQ(LoadStatus(file).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ElfLoaderTest, BadMagicIsRefused) {
  std::vector<uint8_t> file = Simple().Build();
  file[1] = 'F';
  absl::Status status = LoadStatus(file);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("magic"));
}

TEST_F(ElfLoaderTest, Class32IsRefused) {
  std::vector<uint8_t> file = Simple().Build();
  file[EI_CLASS] = ELFCLASS32;
  absl::Status status = LoadStatus(file);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("EI_CLASS"));
}

TEST_F(ElfLoaderTest, BigEndianIsRefused) {
  std::vector<uint8_t> file = Simple().Build();
  file[EI_DATA] = ELFDATA2MSB;
  EXPECT_EQ(LoadStatus(file).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ElfLoaderTest, WrongVersionIsRefused) {
  std::vector<uint8_t> file = Simple().Build();
  EditHeader(file, [](Elf64_Ehdr& h) { h.e_version = 2; });
  EXPECT_EQ(LoadStatus(file).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ElfLoaderTest, WrongMachineIsRefused) {
  std::vector<uint8_t> file = Simple().Build();
  EditHeader(file, [](Elf64_Ehdr& h) { h.e_machine = EM_AARCH64; });
  absl::Status status = LoadStatus(file);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("e_machine"));
}

TEST_F(ElfLoaderTest, SharedObjectTypeIsRefused) {
  std::vector<uint8_t> file = Simple().Build();
  EditHeader(file, [](Elf64_Ehdr& h) { h.e_type = ET_DYN; });
  absl::Status status = LoadStatus(file);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("e_type"));
}

TEST_F(ElfLoaderTest, WrongPhentsizeIsRefused) {
  std::vector<uint8_t> file = Simple().Build();
  EditHeader(file, [](Elf64_Ehdr& h) { h.e_phentsize = sizeof(Elf32_Phdr); });
  EXPECT_EQ(LoadStatus(file).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ElfLoaderTest, PhoffPastEndIsRefused) {
  std::vector<uint8_t> file = Simple().Build();
  EditHeader(file, [&](Elf64_Ehdr& h) { h.e_phoff = file.size(); });
  absl::Status status = LoadStatus(file);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("e_phoff"));
}

TEST_F(ElfLoaderTest, ProgramHeaderTableEndOverflowIsRefused) {
  std::vector<uint8_t> file = Simple().Build();
  EditHeader(file, [](Elf64_Ehdr& h) {
    h.e_phoff = UINT64_MAX - 8;  // phoff + phnum * phentsize wraps to a small value
    h.e_phnum = 0xFFFE;
  });
  EXPECT_EQ(LoadStatus(file).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ElfLoaderTest, ExtendedPhnumIsRefused) {
  std::vector<uint8_t> file = Simple().Build();
  EditHeader(file, [](Elf64_Ehdr& h) { h.e_phnum = PN_XNUM; });
  EXPECT_EQ(LoadStatus(file).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ElfLoaderTest, SegmentPastFileEndIsRefused) {
  std::vector<uint8_t> file = Simple().Build();
  file.pop_back();  // the segment's last byte is gone
  absl::Status status = LoadStatus(file);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("p_filesz"));
}

TEST_F(ElfLoaderTest, SegmentOffsetOverflowIsRefused) {
  std::vector<uint8_t> file = Simple().Build();
  EditPhdr(file, 0, [](Elf64_Phdr& ph) { ph.p_offset = UINT64_MAX - 1; });
  EXPECT_EQ(LoadStatus(file).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ElfLoaderTest, FileszLargerThanMemszIsRefused) {
  std::vector<uint8_t> file = Simple().Build();
  EditPhdr(file, 0, [](Elf64_Phdr& ph) { ph.p_memsz = ph.p_filesz - 1; });
  absl::Status status = LoadStatus(file);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("p_memsz"));
}

TEST_F(ElfLoaderTest, PaddrPlusMemszOverflowIsRefused) {
  std::vector<uint8_t> file = Simple().Build();
  EditPhdr(file, 0, [](Elf64_Phdr& ph) { ph.p_memsz = UINT64_MAX - kBase + 2; });
  absl::Status status = LoadStatus(file);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("overflow"));
}

TEST_F(ElfLoaderTest, OverlappingSegmentsAreRefused) {
  ElfBuilder b = Simple();
  b.Load(kBase + 15, {1}, 1, PF_R);  // first segment's last byte
  absl::Status status = LoadStatus(b.Build());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("overlap"));
}

TEST_F(ElfLoaderTest, ContainedSegmentIsRefused) {
  ElfBuilder b;
  b.Load(kBase + 4, {1}, 4, PF_R);  // listed first: detection must not rely on order
  b.Load(kBase, {0xF4}, 0x100);
  EXPECT_EQ(LoadStatus(b.Build()).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ElfLoaderTest, EntryOutsideSegmentsIsRefused) {
  ElfBuilder b = Simple();
  b.header().e_entry = kBase + 16;  // one past p_memsz
  absl::Status status = LoadStatus(b.Build());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("e_entry"));
}

TEST_F(ElfLoaderTest, EntryInNonExecutableSegmentIsRefused) {
  ElfBuilder b;
  b.Load(kBase, {0xF4}, 1, PF_R | PF_W);
  EXPECT_EQ(LoadStatus(b.Build()).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ElfLoaderTest, NoLoadSegmentIsRefused) {
  ElfBuilder b;
  b.Note("Xen", 18, {0, 0, 0x10, 0});
  absl::Status status = LoadStatus(b.Build());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("PT_LOAD"));
}

TEST_F(ElfLoaderTest, PvhNoteWithBadDescriptorSizeIsRefused) {
  ElfBuilder b = Simple();
  b.Note("Xen", 18, {0, 0, 0x10});
  EXPECT_EQ(LoadStatus(b.Build()).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ElfLoaderTest, NotePastItsSegmentIsRefused) {
  ElfBuilder b = Simple();
  b.Note("Xen", 18, {0, 0, 0x10, 0});
  std::vector<uint8_t> file = b.Build();
  EditPhdr(file, 1, [](Elf64_Phdr& ph) { ph.p_filesz -= 4; });  // cuts the descriptor
  EXPECT_EQ(LoadStatus(file).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ElfLoaderTest, PvhEntryOutsideLoadedSegmentsIsRefused) {
  ElfBuilder b = Simple();
  b.Note("Xen", 18, {0, 0, 0x20, 0});  // 2 MiB: nothing loaded there
  EXPECT_EQ(LoadStatus(b.Build()).code(), absl::StatusCode::kInvalidArgument);
}

// --- placement: OutOfRange ---

TEST_F(ElfLoaderTest, PaddrBelowOneMibIsOutOfRange) {
  std::vector<uint8_t> file = Simple().Build();
  EditPhdr(file, 0, [](Elf64_Phdr& ph) { ph.p_paddr = kBase - 0x1000; });
  absl::Status status = LoadStatus(file);
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(status.message(), HasSubstr("p_paddr"));
}

TEST_F(ElfLoaderTest, SegmentPastEndOfRamIsOutOfRange) {
  ElfBuilder b;
  b.header().e_entry = kRamSize - 1;
  b.Load(kRamSize - 1, {0xF4}, 2);
  absl::Status status = LoadStatus(b.Build());
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(status.message(), HasSubstr("RAM"));
}

TEST_F(ElfLoaderTest, RefusedImageLeavesMemoryUntouched) {
  ElfBuilder b = Simple();
  b.Load(kRamSize, {1}, 1, PF_R);  // valid first segment, second one outside RAM
  ASSERT_EQ(LoadStatus(b.Build()).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ram_, std::vector<uint8_t>(kRamSize, kFill));
}

}  // namespace
}  // namespace minivmm
