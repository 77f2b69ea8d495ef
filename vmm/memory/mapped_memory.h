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
