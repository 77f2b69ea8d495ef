// The digest that run and bench records name a guest image by.
#ifndef MINIVMM_CLI_FILE_DIGEST_H_
#define MINIVMM_CLI_FILE_DIGEST_H_

#include <string>

namespace minivmm::cli {

// "sha256:<64 hex digits>" of the file's bytes, or "" if it cannot be read.
std::string FileSha256(const std::string& path);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_FILE_DIGEST_H_
