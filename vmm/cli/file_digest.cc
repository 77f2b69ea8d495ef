#include "vmm/cli/file_digest.h"

#include <openssl/evp.h>

#include <fstream>
#include <iterator>

#include "fmt/format.h"

namespace minivmm::cli {

std::string FileSha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr)) return "";
  std::string hex = "sha256:";
  for (unsigned i = 0; i < len; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

}  // namespace minivmm::cli
