// Fuzzes LoadElf with the input as the ELF file, over guest RAM that ends
// 128 KiB above MVMM_KERNEL_MIN_GPA (so both fitting and overflowing images
// are reachable).
// Invariants: a refused image leaves RAM byte-for-byte unchanged; an accepted
// one reports a layout inside RAM at or above the kernel minimum, an entry
// inside a segment, a PVH entry (if any) inside a PT_LOAD, and RAM below the
// kernel minimum untouched (poisoned for ASan: any access there is a report).
#include "vmm/elf/elf_loader.h"

#include <sanitizer/asan_interface.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/input.h"
#include "minivmm_abi/boot.h"

namespace {

constexpr uint64_t kRamSize = MVMM_KERNEL_MIN_GPA + 0x20000;
constexpr uint8_t kFill = 0xA5;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One RAM for all runs; restored after an accepted image.
  static std::vector<uint8_t>* ram = [] {
    auto* r = new std::vector<uint8_t>(kRamSize, kFill);
    // The loader must never touch RAM below the kernel minimum: poisoning it
    // makes any access there an ASan report, at no cost per input.
    ASAN_POISON_MEMORY_REGION(r->data(), MVMM_KERNEL_MIN_GPA);
    return r;
  }();
  static const std::vector<uint8_t>* pristine = new std::vector<uint8_t>(kRamSize, kFill);
  constexpr uint64_t kLoadable = kRamSize - MVMM_KERNEL_MIN_GPA;
  const minivmm::GuestMemory memory(*ram);

  const absl::StatusOr<minivmm::LoadedImage> image =
      minivmm::LoadElf(std::span<const uint8_t>(data, size), memory);
  if (!image.ok()) {
    FUZZ_CHECK(image.status().code() == absl::StatusCode::kInvalidArgument ||
               image.status().code() == absl::StatusCode::kOutOfRange);
    FUZZ_CHECK(std::memcmp(ram->data() + MVMM_KERNEL_MIN_GPA,
                           pristine->data() + MVMM_KERNEL_MIN_GPA, kLoadable) == 0);
    return 0;
  }
  FUZZ_CHECK(image->lowest_gpa >= MVMM_KERNEL_MIN_GPA);
  FUZZ_CHECK(image->lowest_gpa < image->end_gpa);
  FUZZ_CHECK(image->end_gpa % 4096 == 0);
  FUZZ_CHECK(image->end_gpa <= ((kRamSize + 4095) & ~uint64_t{4095}));
  FUZZ_CHECK(image->entry_gpa >= image->lowest_gpa && image->entry_gpa < image->end_gpa);
  if (image->pvh_entry) {
    FUZZ_CHECK(*image->pvh_entry >= image->lowest_gpa && *image->pvh_entry < image->end_gpa);
  }
  std::memcpy(ram->data() + MVMM_KERNEL_MIN_GPA, pristine->data() + MVMM_KERNEL_MIN_GPA, kLoadable);
  return 0;
}
