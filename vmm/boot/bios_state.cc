#include "vmm/boot/bios_state.h"

#include <vector>

#include "vmm/core/status_macros.h"

namespace minivmm {
namespace {

constexpr uint64_t kBiosSegmentBase = uint64_t{kBiosSegment} << 4;
constexpr uint64_t kOneMiB = 1u << 20;

// A vector's handler: its offset in the BIOS segment.
uint16_t HandlerOffset(uint32_t vector) {
  if (vector >= kBiosPicMaster.vector_base && vector < kBiosPicMaster.vector_base + 8u)
    return kBiosMasterIrqOffset;
  if (vector >= kBiosPicSlave.vector_base && vector < kBiosPicSlave.vector_base + 8u)
    return kBiosSlaveIrqOffset;
  return kBiosIretOffset;
}

template <size_t N>
bool WriteCode(const GuestMemory& memory, uint16_t offset, const std::array<uint8_t, N>& code) {
  return memory.Write(GuestAddress(kBiosSegmentBase + offset), std::span<const uint8_t>(code));
}

}  // namespace

absl::Status WriteBiosInterruptVectors(const GuestMemory& memory) {
  if (memory.size() < kOneMiB)
    return absl::OutOfRangeError("the BIOS area needs at least 1 MiB of RAM");
  std::vector<uint8_t> ivt(kBiosIvtVectors * 4);
  for (uint32_t v = 0; v < kBiosIvtVectors; ++v) {
    const uint16_t offset = HandlerOffset(v);
    ivt[v * 4 + 0] = static_cast<uint8_t>(offset);
    ivt[v * 4 + 1] = static_cast<uint8_t>(offset >> 8);
    ivt[v * 4 + 2] = static_cast<uint8_t>(kBiosSegment);
    ivt[v * 4 + 3] = static_cast<uint8_t>(kBiosSegment >> 8);
  }
  const std::array<uint8_t, 1> iret = {0xCF};
  if (!memory.Write(GuestAddress(kBiosIvtGpa), std::span<const uint8_t>(ivt)) ||
      !WriteCode(memory, kBiosMasterIrqOffset, kBiosMasterIrqCode) ||
      !WriteCode(memory, kBiosSlaveIrqOffset, kBiosSlaveIrqCode) ||
      !WriteCode(memory, kBiosIretOffset, iret))
    return absl::InternalError("the BIOS area is inside RAM but could not be written");
  return absl::OkStatus();
}

}  // namespace minivmm
