#include "hypercalls/descriptor.h"

#include <cstring>

#include "minivmm_abi/boot.h"

namespace minivmm {
namespace {

// Legacy segment descriptor fields (Intel SDM vol. 3, 3.4.5).
constexpr uint64_t kTypeCode = 1ull << 43;  // type bit 3: 1 = code
constexpr uint64_t kS = 1ull << 44;         // 1 = code/data, 0 = system
constexpr int kDplShift = 45;
constexpr uint64_t kP = 1ull << 47;
constexpr uint64_t kL = 1ull << 53;

}  // namespace

const char* DescriptorVerdictName(DescriptorVerdict verdict) {
  switch (verdict) {
    case DescriptorVerdict::kOk:
      return "ok";
    case DescriptorVerdict::kNotPresent:
      return "not present";
    case DescriptorVerdict::kSystemSegment:
      return "system segment";
    case DescriptorVerdict::kCodeSegment:
      return "code segment";
    case DescriptorVerdict::kWrongDpl:
      return "DPL is not 3";
    case DescriptorVerdict::kLongBitSet:
      return "L bit set on a data segment";
  }
  return "?";
}

DescriptorVerdict CheckTlsDescriptor(uint64_t desc) {
  if (desc == 0) return DescriptorVerdict::kOk;
  if ((desc & kP) == 0) return DescriptorVerdict::kNotPresent;
  if ((desc & kS) == 0) return DescriptorVerdict::kSystemSegment;
  if ((desc & kTypeCode) != 0) return DescriptorVerdict::kCodeSegment;
  if (((desc >> kDplShift) & 3) != 3) return DescriptorVerdict::kWrongDpl;
  if ((desc & kL) != 0) return DescriptorVerdict::kLongBitSet;
  return DescriptorVerdict::kOk;
}

uint64_t TlsDescriptorToStore(uint64_t desc) { return desc == 0 ? 0 : desc | MVMM_DESC_ACCESSED; }

bool IsTlsSlot(uint64_t slot) {
  return slot >= MVMM_GDT_TLS_FIRST && slot < MVMM_GDT_TLS_FIRST + MVMM_GDT_TLS_COUNT;
}

uint64_t Load64(std::span<const uint8_t> bytes, size_t offset) {
  const uint8_t* src = bytes.data() + offset;
  // Safety: the pointer is only converted to test its alignment, not dereferenced.
  if (reinterpret_cast<uintptr_t>(src) % alignof(uint64_t) == 0) {
    // Safety: 8-aligned and in bounds (caller's precondition); one atomic 8-byte load.
    return __atomic_load_n(reinterpret_cast<const uint64_t*>(src), __ATOMIC_RELAXED);
  }
  uint64_t value;
  // Safety: in bounds (caller's precondition), u64 is trivially copyable; test buffers only.
  std::memcpy(&value, src, sizeof(value));
  return value;
}

void Store64(std::span<uint8_t> bytes, size_t offset, uint64_t value) {
  uint8_t* dst = bytes.data() + offset;
  // Safety: the pointer is only converted to test its alignment, not dereferenced.
  if (reinterpret_cast<uintptr_t>(dst) % alignof(uint64_t) == 0) {
    // Safety: 8-aligned and in bounds (caller's precondition); one atomic 8-byte store.
    __atomic_store_n(reinterpret_cast<uint64_t*>(dst), value, __ATOMIC_RELAXED);
  } else {
    // Safety: in bounds (caller's precondition), u64 is trivially copyable; test buffers only.
    std::memcpy(dst, &value, sizeof(value));
  }
}

}  // namespace minivmm
