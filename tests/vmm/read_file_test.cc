#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "vmm/elf/elf_loader.h"

namespace minivmm {
namespace {

std::string WriteTempFile(const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return path;
}

TEST(ReadFileTest, ReadsWholeFile) {
  const std::vector<uint8_t> bytes = {0x7F, 'E', 'L', 'F', 0, 1, 2, 0xFF};
  const std::string path = WriteTempFile("read_file_whole", bytes);
  absl::StatusOr<std::vector<uint8_t>> data = ReadFile(path);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(*data, bytes);
  unlink(path.c_str());
}

TEST(ReadFileTest, EmptyFileGivesNoBytes) {
  const std::string path = WriteTempFile("read_file_empty", {});
  absl::StatusOr<std::vector<uint8_t>> data = ReadFile(path);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_TRUE(data->empty());
  unlink(path.c_str());
}

TEST(ReadFileTest, MissingFileIsNotFound) {
  absl::Status status = ReadFile(::testing::TempDir() + "no/such/file").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("no/such/file"), std::string::npos);
}

TEST(ReadFileTest, DirectoryIsInvalidArgument) {
  EXPECT_EQ(ReadFile(::testing::TempDir()).status().code(), absl::StatusCode::kInvalidArgument);
}

// Runs in a child process that is not root (root reads any file), so the
// mode-000 file is really unreadable.
TEST(ReadFileDeathTest, UnreadableFileIsPermissionDenied) {
  const std::string path = WriteTempFile("read_file_unreadable", {1, 2, 3});
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  EXPECT_EXIT(
      {
        if (geteuid() == 0 && setuid(65534) != 0) std::_Exit(2);  // nobody
        const bool denied = ReadFile(path).status().code() == absl::StatusCode::kPermissionDenied;
        std::_Exit(denied ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  unlink(path.c_str());
}

}  // namespace
}  // namespace minivmm
