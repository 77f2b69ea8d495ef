// The guest's frame-pointer chain, read through GuestMemory (docs/sites.md).
// Pure: no KVM, so it is unit-tested over a host buffer.
#ifndef MINIVMM_VMM_RUN_FRAME_WALK_H_
#define MINIVMM_VMM_RUN_FRAME_WALK_H_

#include <cstdint>
#include <span>

#include "minivmm/guest_memory.h"

namespace minivmm {

// Fills out[0] with `rip` and out[1..] with the return addresses found by
// following `rbp`: each frame is [saved RBP, return address] at RBP, read
// as 16 bytes of guest-physical memory (the built-in guest is identity
// mapped, so its virtual RBP is a physical address). Returns the frames
// filled, 1 to out.size() (out must not be empty). The walk stops, keeping
// what it has, at a frame pointer that is non-canonical, not 8-byte
// aligned, zero, not wholly inside RAM, not above the previous one (which
// also ends any loop), or a return address of zero, and after out.size() frames:
// whatever the guest put in its memory and registers, it reads at most
// out.size() - 1 frames and never outside RAM.
//
// With `code32` (the vCPU runs 32-bit code: CS.L clear, as the PC machine's
// guests do until they enter long mode), each frame is [saved EBP, return
// address] as two 32-bit words, the low 32 bits of `rbp` and of every saved
// EBP count, and a frame pointer must be 4-byte aligned; the rest is the same.
int WalkFrames(const GuestMemory& memory, uint64_t rip, uint64_t rbp, std::span<uint64_t> out,
               bool code32 = false);

}  // namespace minivmm

#endif  // MINIVMM_VMM_RUN_FRAME_WALK_H_
