// Physical memory and the kernel's own page tables.
//
// Memory map (guest-physical == virtual, shared by every address space):
//   0x0000_0000  page 0, left unmapped to catch null dereferences
//   0x0000_1000  boot_info, 0x2000 command line, 0x3000 TSS (VMM-owned)
//   0x0001_0000  the VMM's boot page tables (unused after PagingInit)
//   0x0007_0000  the VMM's boot stack (unused after _start)
//   0x0010_0000  kernel image; its .user_* pages are the only user pages
//   first_free   early page-table pages (bump allocated)
//   next 2 MiB   user arena: user stacks and TLS blocks, 4 KiB pages, U=1
//   next 2 MiB   cpa arena: kernel pages with 4 KiB PTEs for workload=cpa;
//                under pv, the pool of shuffled machine frames (lib/physmap.h)
//   then         general page allocator (task structs, kernel stacks, pipes)
//   0xC000_0000  the read-only GDT page (one 4 KiB mapping)
// All of it lies under PML4 slot 0, which every address space shares. A
// process's own pages live in its private region (PML4 slot 1, below).
#ifndef GUEST_KERNEL_MEM_H_
#define GUEST_KERNEL_MEM_H_

#include <stddef.h>
#include <stdint.h>

namespace guest {

inline constexpr uint64_t kPageSize = 4096;
inline constexpr uint64_t kLargePageSize = 2ull << 20;

inline constexpr uint64_t kPtePresent = 1ull << 0;
inline constexpr uint64_t kPteWrite = 1ull << 1;
inline constexpr uint64_t kPteUser = 1ull << 2;
inline constexpr uint64_t kPteAccessed = 1ull << 5;
inline constexpr uint64_t kPteDirty = 1ull << 6;
inline constexpr uint64_t kPteHuge = 1ull << 7;
inline constexpr uint64_t kPteNx = 1ull << 63;
inline constexpr uint64_t kPteAddrMask = 0x000ffffffffff000ull;
// Linux PTE_FLAGS_MASK: everything that is not the frame number.
inline constexpr uint64_t kPteFlagsMask = ~kPteAddrMask;

inline constexpr uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

// Sets up the allocator and page tables and loads CR3. Called once at boot.
void MemInit(uint64_t first_free, uint64_t memory_size, uint64_t gdt_gpa);

// Zeroed pages from the general allocator; panics when memory runs out
// (workload sizes are bounded, so that is a kernel bug or a tiny --memory).
void* AllocPages(size_t count);
// Zeroed pages from the user arena (mapped user-accessible).
void* AllocUserPages(size_t count);

// The 4 KiB PTE mapping `va`, or nullptr when `va` is not 4 KiB-mapped.
uint64_t* LookupPte(uint64_t va);

struct Arena {
  uint64_t start;
  uint64_t size;
};
Arena CpaArena();

// Flushes this CPU's whole TLB (a CR3 reload, no exit; flush_tlb_others is
// for the other CPUs' TLBs).
void FlushTlb();

// The private region of an address space: PML4 slot 1, one page directory
// (1 GiB) of 4 KiB user pages (U=1, NX). Each address space maps its own
// pages here, so the same virtual address holds different data in each.
inline constexpr uint64_t kPrivateBase = 1ull << 39;
inline constexpr uint64_t kPrivateSize = 1ull << 30;

// An address space (Linux's mm): its own top-level table, whose slot 0 is
// the kernel's (the identity map, shared page tables and all) and whose
// slot 1 is its private region. Never freed.
struct Mm {
  uint64_t* pml4;
  uint64_t* private_pd;  // null for the kernel's, which has no private region
};

// The boot address space, loaded by MemInit.
Mm* KernelMm();
// A new address space with an empty private region. Not live until a
// context switch loads it.
Mm* NewMm();
// Maps the page at guest-physical `pa` at `va` (inside the private region,
// page aligned) in `mm`, which must not be live: the tables are written
// with plain stores, like the boot tables.
void MapPrivatePage(Mm* mm, uint64_t va, uint64_t pa);
// The PTE mapping `va` (inside the private region, page aligned, mapped by
// MapPrivatePage) in `mm`: once `mm` may be live, change it only through
// SetPte.
uint64_t* PrivatePte(Mm* mm, uint64_t va);

}  // namespace guest

#endif  // GUEST_KERNEL_MEM_H_
