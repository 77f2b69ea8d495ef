#include "cli/output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/str_cat.h"

namespace minivmm::cli {
namespace {

mode_t DefaultFileMode() {
  // umask can only be read by setting it; the CLI is single-threaded here.
  mode_t mask = umask(0);
  umask(mask);
  return 0666 & ~mask;
}

}  // namespace

absl::StatusOr<std::unique_ptr<OutputFile>> OutputFile::Create(const std::string& path,
                                                               const std::string& what) {
  auto fail = [&](int err) {
    return absl::InvalidArgumentError(absl::StrCat("cannot create ", what, " ", path, ": ",
                                                   path.empty() ? "empty path" : strerror(err)));
  };
  if (path.empty() || path.back() == '/') return fail(EISDIR);
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) return fail(EISDIR);
    FILE* f = fopen(path.c_str(), "w");
    if (f == nullptr) return fail(errno);
    return std::unique_ptr<OutputFile>(new OutputFile(path, what, path, f, /*in_place=*/true));
  }
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = base.find_last_of('.');
  const std::string ext = dot == std::string::npos || dot == 0 ? "" : base.substr(dot);
  const std::string stem = base.substr(0, base.size() - ext.size());
  std::string temp = absl::StrCat(dir, ".", stem, ".XXXXXX", ext);
  std::vector<char> buffer(temp.begin(), temp.end());
  buffer.push_back('\0');
  // mkstemps replaces the XXXXXX in place and creates the file 0600.
  int fd = mkstemps(buffer.data(), static_cast<int>(ext.size()));
  if (fd < 0) return fail(errno);
  temp.assign(buffer.data());
  fchmod(fd, DefaultFileMode());
  FILE* f = fdopen(fd, "w");
  if (f == nullptr) {
    const int err = errno;
    close(fd);
    unlink(temp.c_str());
    return fail(err);
  }
  return std::unique_ptr<OutputFile>(new OutputFile(path, what, temp, f, /*in_place=*/false));
}

OutputFile::OutputFile(std::string path, std::string what, std::string temp_path, FILE* file,
                       bool in_place)
    : path_(std::move(path)),
      what_(std::move(what)),
      temp_path_(std::move(temp_path)),
      file_(file),
      in_place_(in_place) {}

OutputFile::~OutputFile() {
  if (!done_) Abandon();
}

void OutputFile::Write(std::string_view bytes) {
  if (file_ == nullptr || error_ != 0 || bytes.empty()) return;
  errno = 0;
  if (fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) error_ = errno ? errno : EIO;
}

absl::Status OutputFile::Commit() {
  done_ = true;
  int err = error_;
  if (file_ != nullptr) {
    errno = 0;
    if (err == 0 && fflush(file_) != 0) err = errno != 0 ? errno : EIO;
    // The contents may also have come from another process (temp_path()).
    if (err == 0 && !in_place_ && fsync(fileno(file_)) != 0) err = errno;
    if (fclose(file_) != 0 && err == 0) err = errno;
    file_ = nullptr;
  }
  if (err == 0 && !in_place_ && rename(temp_path_.c_str(), path_.c_str()) != 0) err = errno;
  if (err == 0) return absl::OkStatus();
  if (!in_place_) unlink(temp_path_.c_str());
  return absl::InternalError(absl::StrCat("cannot write ", what_, " ", path_, ": ", strerror(err)));
}

void OutputFile::Abandon() {
  done_ = true;
  if (file_ != nullptr) fclose(file_);
  file_ = nullptr;
  if (!in_place_) unlink(temp_path_.c_str());
}

}  // namespace minivmm::cli
