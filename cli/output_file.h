// OutputFile: how every file the CLI writes (run --json and --trace, bench
// --json, --csv and --plot, report -o, trace -o) reaches its name. Created
// before anything runs, so that a bad path is a usage error with nothing
// run; written to a temporary file beside the target; renamed into place
// only when complete (README.md "Exit status", docs/run-record.md "What a
// failure leaves behind"):
//
//   Create   at start-up: `.<stem>.XXXXXX<ext>` in the target's directory
//            (the extension kept for writers that go by it, the plot script)
//   Write    the first error is kept and reported by Commit
//   Commit   flush, fsync, close, rename: the first error as one line
//   Abandon  close and unlink the temporary file (also the destructor's)
//
// A kill -9 leaves the temporary file, never a partial file under the final
// name. A target that exists and is not a regular file (/dev/stdout, a FIFO,
// /dev/null) is written in place: it cannot be renamed onto, and it holds
// nothing to lose.
#ifndef MINIVMM_CLI_OUTPUT_FILE_H_
#define MINIVMM_CLI_OUTPUT_FILE_H_

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace minivmm::cli {

class OutputFile {
 public:
  // InvalidArgumentError "cannot create <what> <path>: <strerror>" when the
  // temporary file cannot be made (no such directory, no permission, a
  // directory as the target). `what` names the file in messages ("trace").
  static absl::StatusOr<std::unique_ptr<OutputFile>> Create(const std::string& path,
                                                            const std::string& what);
  ~OutputFile();  // Abandon() unless committed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::string& path() const { return path_; }
  // Where another process may write the contents instead (the plot script):
  // the temporary file, or the target itself when written in place.
  const std::string& temp_path() const { return temp_path_; }
  // Buffered; the first error (errno) is kept for Commit, later writes are
  // dropped.
  void Write(std::string_view bytes);

  // Ends the file: flush, fsync, close and rename onto path(). On any error,
  // InternalError "cannot write <what> <path>: <strerror>" and the
  // temporary file is removed. Call at most once.
  absl::Status Commit();
  // Closes and removes the temporary file; the target is left as it was.
  void Abandon();

 private:
  OutputFile(std::string path, std::string what, std::string temp_path, FILE* file, bool in_place);

  std::string path_, what_, temp_path_;
  FILE* file_;  // null once closed
  bool in_place_;
  int error_ = 0;  // the first write's errno
  bool done_ = false;
};

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_OUTPUT_FILE_H_
