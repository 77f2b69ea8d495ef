#include "cli/file_digest.h"

// Nettle rather than OpenSSL: a static archive of a few kilobytes whose only
// start-up work is a CPU-feature check. Loading libcrypto cost every
// `minivmm run` ~1 ms of CPU time shared, ~0.4 ms static, digest or not, and
// its first digest initialised OpenSSL (config file, provider fetch)
// (docs/RESULTS.md, benchmark 3b).
#include <nettle/sha2.h>

#include <fstream>
#include <iterator>

#include "fmt/format.h"

namespace minivmm::cli {

std::string FileSha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  sha256_ctx ctx;
  sha256_init(&ctx);
  sha256_update(&ctx, data.size(), reinterpret_cast<const uint8_t*>(data.data()));
  uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, sizeof digest, digest);
  std::string hex = "sha256:";
  for (uint8_t byte : digest) hex += fmt::format("{:02x}", byte);
  return hex;
}

}  // namespace minivmm::cli
