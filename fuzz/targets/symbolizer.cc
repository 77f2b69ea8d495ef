// Fuzzes Symbolizer::Open and Lookup (include/minivmm/symbolizer.h, over
// elfutils' libdw and libelf) with the input as the guest ELF file, written
// to one memfd that every input reuses. An ELF that opens is asked to name
// its entry point and 8 bytes past it, the start of guest code
// (0x100000) and the top of the built-in guest's range (0x200000), and two
// addresses from the input's last 8 bytes (as they are, and as an offset
// into the first 4 KiB of guest code).
// Invariants: Open fails only with InvalidArgument (the file is always
// there, so a NotFound means open() failed: a leaked descriptor soon makes
// it fail); every Lookup gives at least one frame. ASan and LSan cover our
// side (libdw itself is not instrumented): no crash, overrun or leak.
#include "minivmm/symbolizer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/input.h"

namespace minivmm::fuzz {
namespace {

constexpr uint64_t kGuestCode = 0x100000;

// The memfd that holds the current input, truncated and rewritten per input.
struct InputFile {
  int fd;
  std::string path;
};

const InputFile& File() {
  static const InputFile* file = [] {
    const int fd = memfd_create("symbolizer_fuzz", MFD_CLOEXEC);
    if (fd < 0) std::abort();
    return new InputFile{fd, "/proc/self/fd/" + std::to_string(fd)};
  }();
  return *file;
}

}  // namespace
}  // namespace minivmm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace minivmm;
  using namespace minivmm::fuzz;
  const InputFile& file = File();
  if (ftruncate(file.fd, 0) != 0 || pwrite(file.fd, data, size, 0) != static_cast<ssize_t>(size))
    std::abort();

  const absl::StatusOr<std::unique_ptr<Symbolizer>> symbolizer = Symbolizer::Open(file.path);
  if (!symbolizer.ok()) {
    FUZZ_CHECK(symbolizer.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  uint64_t entry = 0, tail = 0;
  if (size >= 32) std::memcpy(&entry, data + 24, 8);  // ELF64 e_entry
  if (size >= 8) std::memcpy(&tail, data + size - 8, 8);
  for (const uint64_t pc :
       {entry, entry + 8, kGuestCode, kGuestCode + 0x100000, tail, kGuestCode + tail % 0x1000}) {
    FUZZ_CHECK(!(*symbolizer)->Lookup(pc).empty());
  }
  return 0;
}
