// The TLS descriptor policy of docs/design.md ("GDT") as pure functions, shared by
// update_descriptor and the trapped-GDT-store path so the two cannot differ.
#ifndef MINIVMM_HYPERCALLS_DESCRIPTOR_H_
#define MINIVMM_HYPERCALLS_DESCRIPTOR_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace minivmm {

// Why a descriptor was refused for a TLS slot; kOk when accepted.
enum class DescriptorVerdict : uint8_t {
  kOk,
  kNotPresent,     // non-zero but P = 0 (only the all-zero descriptor may be absent)
  kSystemSegment,  // S = 0: TSS, LDT, gates
  kCodeSegment,    // type bit 3 set
  kWrongDpl,       // DPL other than 3
  kLongBitSet,     // L = 1 on a data segment: reserved by the SDM for non-code
};
// Stable short text ("ok", "code segment", ...): a string literal, so it
// serves as a hypercall's static refusal reason too.
const char* DescriptorVerdictName(DescriptorVerdict verdict);

// Decides whether the 8-byte legacy descriptor `desc` may live in a TLS slot
// (GDT entries 7-9): the all-zero descriptor, or a present (P=1) data segment
// (S=1, type bit 3 clear) with DPL 3 and L=0. Base, limit, G, D/B, AVL and the
// data type bits (expand-down, writable, accessed) are free: in 64-bit mode
// they cannot widen what the guest reaches (FS/GS bases are plain addresses).
// Pure, total over all 2^64 inputs.
DescriptorVerdict CheckTlsDescriptor(uint64_t desc);

// The value the VMM stores for an accepted descriptor: `desc` with the
// accessed bit forced on when present (docs/hosts.md: a load of a descriptor
// whose accessed bit is clear hangs the vCPU on a read-only GDT); the zero
// descriptor is stored as zero. Only meaningful when CheckTlsDescriptor is kOk.
uint64_t TlsDescriptorToStore(uint64_t desc);

// True when `slot` is one of the guest-writable TLS slots (7, 8, 9).
bool IsTlsSlot(uint64_t slot);

// Writes `value` into bytes [offset, offset + 8) of `bytes` with one 8-byte
// store when the host address is 8-aligned (the GDT page and guest RAM are),
// so a concurrently running vCPU never observes a torn descriptor or PTE.
// Precondition (caller-checked): offset + 8 <= bytes.size().
void Store64(std::span<uint8_t> bytes, size_t offset, uint64_t value);
// Reads bytes [offset, offset + 8) the same way. Same precondition.
uint64_t Load64(std::span<const uint8_t> bytes, size_t offset);

}  // namespace minivmm

#endif  // MINIVMM_HYPERCALLS_DESCRIPTOR_H_
