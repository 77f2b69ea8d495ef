// Fuzzes FindMultibootHeader and LoadMultiboot with the input as the image
// file, over guest RAM that ends 128 KiB above 1 MiB (so both fitting and
// overflowing images are reachable).
// Invariants: a refused image leaves RAM byte-for-byte unchanged; an accepted
// one has the header FindMultibootHeader finds, reports a page-aligned range
// with the entry inside it, its low part (if any) inside low RAM
// [kMultibootLowLoadGpa, kMultibootLowRamEnd), and leaves the rest below
// 1 MiB untouched (poisoned for ASan: any access there is a report).
#include "vmm/boot/multiboot.h"

#include <sanitizer/asan_interface.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/input.h"

namespace {

constexpr uint64_t kRamSize = minivmm::kMultibootMinLoadGpa + 0x20000;
constexpr uint8_t kFill = 0xA5;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One RAM for all runs; restored after an accepted image.
  static std::vector<uint8_t>* ram = [] {
    auto* r = new std::vector<uint8_t>(kRamSize, kFill);
    ASAN_POISON_MEMORY_REGION(r->data(), minivmm::kMultibootLowLoadGpa);
    ASAN_POISON_MEMORY_REGION(r->data() + minivmm::kMultibootLowRamEnd,
                              minivmm::kMultibootMinLoadGpa - minivmm::kMultibootLowRamEnd);
    return r;
  }();
  static const std::vector<uint8_t>* pristine = new std::vector<uint8_t>(kRamSize, kFill);
  constexpr uint64_t kLow = minivmm::kMultibootMinLoadGpa;
  constexpr uint64_t kLoadable = kRamSize - kLow;
  // Low RAM an image may also load into.
  constexpr uint64_t kLowRam = minivmm::kMultibootLowLoadGpa;
  constexpr uint64_t kLowRamBytes = minivmm::kMultibootLowRamEnd - kLowRam;
  const minivmm::GuestMemory memory(*ram);
  const std::span<const uint8_t> file(data, size);

  const absl::StatusOr<minivmm::MultibootHeader> header = minivmm::FindMultibootHeader(file);
  if (header.ok()) {
    FUZZ_CHECK(header->offset % 4 == 0 && header->offset + 12 <= size);
    FUZZ_CHECK(header->offset < minivmm::kMultibootSearchBytes);
    FUZZ_CHECK(header->addresses.has_value() ==
               ((header->flags & minivmm::kMultibootFlagAddresses) != 0));
  } else {
    FUZZ_CHECK(header.status().code() == absl::StatusCode::kInvalidArgument);
  }

  const absl::StatusOr<minivmm::MultibootImage> image = minivmm::LoadMultiboot(file, memory);
  if (!image.ok()) {
    FUZZ_CHECK(image.status().code() == absl::StatusCode::kInvalidArgument ||
               image.status().code() == absl::StatusCode::kOutOfRange);
    FUZZ_CHECK(std::memcmp(ram->data() + kLow, pristine->data() + kLow, kLoadable) == 0);
    FUZZ_CHECK(std::memcmp(ram->data() + kLowRam, pristine->data() + kLowRam, kLowRamBytes) == 0);
    return 0;
  }
  FUZZ_CHECK(header.ok() && header->offset == image->header.offset &&
             header->flags == image->header.flags);
  FUZZ_CHECK(image->lowest_gpa >= kLowRam);
  FUZZ_CHECK(image->low_end_gpa == 0 ? image->lowest_gpa >= kLow
                                     : image->low_end_gpa <= ((minivmm::kMultibootLowRamEnd + 4095) &
                                                              ~uint64_t{4095}));
  FUZZ_CHECK(image->lowest_gpa < image->end_gpa);
  FUZZ_CHECK(image->end_gpa % 4096 == 0);
  FUZZ_CHECK(image->end_gpa <= ((kRamSize + 4095) & ~uint64_t{4095}));
  FUZZ_CHECK(image->entry >= image->lowest_gpa && image->entry < image->end_gpa);
  std::memcpy(ram->data() + kLow, pristine->data() + kLow, kLoadable);
  std::memcpy(ram->data() + kLowRam, pristine->data() + kLowRam, kLowRamBytes);
  return 0;
}
