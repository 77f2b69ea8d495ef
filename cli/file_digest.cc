#include "cli/file_digest.h"

// Nettle rather than OpenSSL: a static archive of a few kilobytes whose only
// start-up work is a CPU-feature check. Loading libcrypto cost every
// `minivmm run` ~1 ms of CPU time shared, ~0.4 ms static, digest or not, and
// its first digest initialised OpenSSL (config file, provider fetch)
// (docs/RESULTS.md, benchmark 3b).
#include <nettle/sha2.h>

#include <fstream>
#include <vector>

#include "fmt/format.h"

namespace minivmm::cli {

std::string FileSha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  sha256_ctx ctx;
  sha256_init(&ctx);
  // In blocks: a guest built with debug info is about a megabyte.
  std::vector<char> block(1 << 16);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    sha256_update(&ctx, static_cast<size_t>(in.gcount()),
                  reinterpret_cast<const uint8_t*>(block.data()));
  }
  if (in.bad()) return "";
  uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, sizeof digest, digest);
  std::string hex = "sha256:";
  for (uint8_t byte : digest) hex += fmt::format("{:02x}", byte);
  return hex;
}

}  // namespace minivmm::cli
