#include "vmm/memory/guest_memory.h"

#include "absl/strings/str_format.h"

namespace minivmm {
namespace {

absl::Status OutOfRange(GuestAddress gpa, uint64_t len, uint64_t size) {
  return absl::OutOfRangeError(absl::StrFormat(
      "guest range [0x%x, +0x%x) is outside RAM of 0x%x bytes", gpa.value(), len, size));
}

}  // namespace

absl::StatusOr<std::span<uint8_t>> GuestMemory::GetSpan(GuestAddress gpa, uint64_t len) const {
  if (!Contains(gpa, len)) return OutOfRange(gpa, len, size());
  return ram_.subspan(gpa.value(), len);
}

absl::Status GuestMemory::Read(GuestAddress gpa, std::span<uint8_t> out) const {
  if (!Contains(gpa, out.size())) return OutOfRange(gpa, out.size(), size());
  // Safety: the range was checked against ram_ just above.
  if (!out.empty()) std::memcpy(out.data(), ram_.data() + gpa.value(), out.size());
  return absl::OkStatus();
}

absl::Status GuestMemory::Write(GuestAddress gpa, std::span<const uint8_t> in) const {
  if (!Contains(gpa, in.size())) return OutOfRange(gpa, in.size(), size());
  // Safety: the range was checked against ram_ just above.
  if (!in.empty()) std::memcpy(ram_.data() + gpa.value(), in.data(), in.size());
  return absl::OkStatus();
}

}  // namespace minivmm
