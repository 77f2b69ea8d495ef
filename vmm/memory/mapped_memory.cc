#include "vmm/memory/mapped_memory.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "absl/strings/str_format.h"

namespace minivmm {

absl::StatusOr<MappedMemory> MappedMemory::Create(uint64_t size) {
  if (size == 0 || size % 4096 != 0)
    return absl::InvalidArgumentError(
        absl::StrFormat("mapping size %u is not a page multiple", size));
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED)
    return absl::ResourceExhaustedError(
        absl::StrFormat("mmap of %u bytes of guest memory failed: %s", size, strerror(errno)));
  return MappedMemory(static_cast<uint8_t*>(p), size);
}

absl::Status MappedMemory::InvalidateHostPage(uint64_t offset) const {
  constexpr uint64_t kPage = 4096;
  if (offset % kPage != 0 || offset >= size_)
    return absl::InvalidArgumentError(
        absl::StrFormat("offset 0x%x is not a page of the %u-byte mapping", offset, size_));
  if (mprotect(data_ + offset, kPage, PROT_READ) != 0 ||
      mprotect(data_ + offset, kPage, PROT_READ | PROT_WRITE) != 0)
    return absl::InternalError(
        absl::StrFormat("mprotect of guest page 0x%x: %s", offset, strerror(errno)));
  return absl::OkStatus();
}

MappedMemory& MappedMemory::operator=(MappedMemory&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedMemory::~MappedMemory() {
  if (data_ != nullptr) munmap(data_, size_);
}

}  // namespace minivmm
