// An anonymous shared host mapping that backs guest memory (RAM or the GDT
// page). Unmapped on destruction.
#ifndef MINIVMM_VMM_MEMORY_MAPPED_MEMORY_H_
#define MINIVMM_VMM_MEMORY_MAPPED_MEMORY_H_

#include <cstdint>
#include <span>
#include <utility>

#include "absl/status/statusor.h"

namespace minivmm {

class MappedMemory {
 public:
  // Maps `size` bytes (a multiple of 4096), zero-filled, not reserved up
  // front: untouched guest pages cost no host memory.
  static absl::StatusOr<MappedMemory> Create(uint64_t size);

  MappedMemory(MappedMemory&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  MappedMemory& operator=(MappedMemory&& other) noexcept;
  MappedMemory(const MappedMemory&) = delete;
  MappedMemory& operator=(const MappedMemory&) = delete;
  ~MappedMemory();

  // Makes the host drop its page-table entries for the 4 KiB page at
  // `offset` (page-aligned, inside the mapping) by taking write access away
  // and giving it back (two mprotects), contents unchanged. Through the MMU
  // notifier, KVM drops its own mapping of the page too, and faults it in
  // again at the guest's next access (QEMU's pc-testdev flush; QEMU takes
  // all access away, PROT_NONE, which invalidates just the same). Between
  // the two calls the page is read-only to every thread: a write to it then
  // by another thread faults (KVM fails a vCPU's KVM_RUN with EFAULT), as
  // under QEMU. InvalidArgument for an offset that is not such a page.
  absl::Status InvalidateHostPage(uint64_t offset) const;

  std::span<uint8_t> span() const { return {data_, size_}; }
  void* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  MappedMemory(uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_MEMORY_MAPPED_MEMORY_H_
