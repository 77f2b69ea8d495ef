#include "kernel/mem.h"

#include "arch/cpu.h"
#include "kernel/panic.h"
#include "kernel/user_mem.h"
#include "pv/pv_ops.h"

extern "C" char __user_start[], __user_end[], __kernel_end[];

namespace guest {
namespace {

uint64_t g_next = 0;  // general bump allocator
uint64_t g_end = 0;
uint64_t g_user_next = 0;
Arena g_user_arena;
Arena g_cpa_arena;
uint64_t* g_pml4 = nullptr;
Mm g_kernel_mm;

// rep stosq: one emulated instruction instead of a 512-iteration loop.
void ZeroQwords(void* p, uint64_t qwords) {
  asm volatile("rep stosq" : "+D"(p), "+c"(qwords) : "a"(0ull) : "memory");
}

uint64_t* NewTable() { return static_cast<uint64_t*>(AllocPages(1)); }

uint64_t Addr(void* p) { return reinterpret_cast<uint64_t>(p); }

// Intermediate entries allow everything; the leaf decides (user, write, nx).
constexpr uint64_t kTableFlags = kPtePresent | kPteWrite | kPteUser;

uint64_t* Walk(uint64_t* table, uint64_t va, int shift) {
  uint64_t e = table[(va >> shift) & 511];
  if (!(e & kPtePresent) || (e & kPteHuge)) return nullptr;
  return reinterpret_cast<uint64_t*>(e & kPteAddrMask);
}

// Replaces the 2 MiB mapping of the region holding `va` by a table of 4 KiB
// pages with the same flags (`extra` added). Boot only: the tables are not
// live yet, so plain stores are correct under every backend.
uint64_t* Split(uint64_t* pd, uint64_t va, uint64_t extra) {
  uint64_t base = va & ~(kLargePageSize - 1);
  uint64_t* pt = NewTable();
  for (uint64_t i = 0; i < 512; ++i)
    pt[i] = (base + i * kPageSize) | kPtePresent | kPteWrite | extra;
  pd[(va >> 21) & 511] = Addr(pt) | kTableFlags;
  return pt;
}

}  // namespace

namespace {

// Bump allocators, safe on any CPU: a compare-and-swap claims the range (no
// lock, so no interrupt-flag op and no exit). Nothing is ever freed.
uint64_t Claim(uint64_t* next, uint64_t limit, size_t count, const char* exhausted) {
  const uint64_t bytes = count * kPageSize;
  uint64_t p = __atomic_load_n(next, __ATOMIC_RELAXED);
  do {
    if (count == 0 || bytes / kPageSize != count || p + bytes > limit || p + bytes < p)
      Panic(exhausted);
  } while (!__atomic_compare_exchange_n(next, &p, p + bytes, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  ZeroQwords(reinterpret_cast<void*>(p), bytes / 8);
  return p;
}

}  // namespace

void* AllocPages(size_t count) {
  return reinterpret_cast<void*>(Claim(&g_next, g_end, count, "out of memory"));
}

void* AllocUserPages(size_t count) {
  return reinterpret_cast<void*>(Claim(&g_user_next, g_user_arena.start + g_user_arena.size,
                                       count, "user arena exhausted"));
}

bool UserRangeOk(uint64_t addr, uint64_t len) {
  uint64_t end = addr + len;
  if (end < addr) return false;
  auto inside = [&](uint64_t lo, uint64_t hi) { return addr >= lo && end <= hi; };
  return inside(Addr(__user_start), Addr(__user_end)) ||
         inside(g_user_arena.start, g_user_arena.start + g_user_arena.size);
}

void MemInit(uint64_t first_free, uint64_t memory_size, uint64_t gdt_gpa) {
  if (Addr(__kernel_end) > kLargePageSize) Panic("kernel image crosses 2 MiB");
  g_next = AlignUp(first_free < Addr(__kernel_end) ? Addr(__kernel_end) : first_free, kPageSize);
  g_end = memory_size;

  g_pml4 = NewTable();
  uint64_t* pdpt = NewTable();
  g_pml4[0] = Addr(pdpt) | kTableFlags;
  uint64_t* pds[4] = {};
  for (uint64_t gib = 0; gib * (1ull << 30) < memory_size; ++gib) {
    pds[gib] = NewTable();
    pdpt[gib] = Addr(pds[gib]) | kTableFlags;
    for (uint64_t i = 0; i < 512; ++i) {
      uint64_t pa = (gib << 30) + i * kLargePageSize;
      if (pa >= memory_size) break;
      pds[gib][i] = pa | kPtePresent | kPteWrite | kPteHuge;
    }
  }
  // The read-only GDT page: writable in the PTE so that a native store
  // reaches the VMM (as an MMIO exit) instead of faulting in the guest.
  // (Under PVH the GDT is in the kernel image, already mapped.)
  uint64_t gib = gdt_gpa >> 30;
  if (gdt_gpa < memory_size) gib = 4;
  if (gib < 4) {
    if (pds[gib] == nullptr) {
      pds[gib] = NewTable();
      pdpt[gib] = Addr(pds[gib]) | kTableFlags;
    }
    uint64_t* gdt_pt = NewTable();
    pds[gib][(gdt_gpa >> 21) & 511] = Addr(gdt_pt) | kTableFlags;
    gdt_pt[(gdt_gpa >> 12) & 511] = gdt_gpa | kPtePresent | kPteWrite | kPteNx;
  } else if (gdt_gpa >= memory_size) {
    Panic("GDT above 4 GiB");
  }

  // First 2 MiB: 4 KiB pages; page 0 unmapped; .user_* pages user-accessible.
  uint64_t* pt0 = Split(pds[0], 0, 0);
  pt0[0] = 0;
  for (uint64_t a = Addr(__user_start); a < Addr(__user_end); a += kPageSize)
    pt0[a >> 12] |= kPteUser;

  uint64_t user = AlignUp(g_next, kLargePageSize);
  g_user_arena = {user, kLargePageSize};
  g_cpa_arena = {user + kLargePageSize, kLargePageSize};
  if (g_cpa_arena.start + kLargePageSize + kLargePageSize > memory_size)
    Panic("not enough RAM (need ~8 MiB)");
  Split(pds[user >> 30], user, kPteUser | kPteNx);
  // The cpa arena is the pool whose machine frames differ from the
  // pseudo-physical ones under pv (lib/physmap.h): its table gets machine
  // frames there. Each page is then tagged with the pseudo-physical address
  // it is mapped at, stored at its machine frame through the tables still
  // live (the VMM's identity map of RAM, or pvh.S's); workload=cpa reads
  // the tags back through ours.
  static_assert(kPhysmapPoolPages * kPageSize == kLargePageSize);
  uint64_t* cpa_pt = Split(pds[g_cpa_arena.start >> 30], g_cpa_arena.start, 0);
  PvPhysmapInit(g_cpa_arena.start, cpa_pt);
  for (uint64_t i = 0; i < kLargePageSize / kPageSize; ++i)
    *reinterpret_cast<uint64_t*>(cpa_pt[i] & kPteAddrMask) = g_cpa_arena.start + i * kPageSize;
  g_user_next = user;
  g_next = g_cpa_arena.start + kLargePageSize;

  g_kernel_mm = {g_pml4, nullptr};
  WriteCr3(Addr(g_pml4));
}

Mm* KernelMm() { return &g_kernel_mm; }

Mm* NewMm() {
  static_assert(sizeof(Mm) <= kPageSize);
  Mm* mm = static_cast<Mm*>(AllocPages(1));
  mm->pml4 = NewTable();
  mm->pml4[0] = g_pml4[0];
  uint64_t* pdpt = NewTable();
  mm->private_pd = NewTable();
  mm->pml4[(kPrivateBase >> 39) & 511] = Addr(pdpt) | kTableFlags;
  pdpt[(kPrivateBase >> 30) & 511] = Addr(mm->private_pd) | kTableFlags;
  return mm;
}

void MapPrivatePage(Mm* mm, uint64_t va, uint64_t pa) {
  GUEST_ASSERT(mm->private_pd != nullptr);
  GUEST_ASSERT(va >= kPrivateBase && va - kPrivateBase < kPrivateSize && va % kPageSize == 0);
  uint64_t& pde = mm->private_pd[(va >> 21) & 511];
  if (pde == 0) pde = Addr(NewTable()) | kTableFlags;
  uint64_t* pt = reinterpret_cast<uint64_t*>(pde & kPteAddrMask);
  pt[(va >> 12) & 511] = pa | kPtePresent | kPteWrite | kPteUser | kPteNx;
}

uint64_t* PrivatePte(Mm* mm, uint64_t va) {
  GUEST_ASSERT(mm->private_pd != nullptr);
  GUEST_ASSERT(va >= kPrivateBase && va - kPrivateBase < kPrivateSize && va % kPageSize == 0);
  const uint64_t pde = mm->private_pd[(va >> 21) & 511];
  GUEST_ASSERT(pde & kPtePresent);
  return &reinterpret_cast<uint64_t*>(pde & kPteAddrMask)[(va >> 12) & 511];
}

uint64_t* LookupPte(uint64_t va) {
  uint64_t* pdpt = Walk(g_pml4, va, 39);
  uint64_t* pd = pdpt ? Walk(pdpt, va, 30) : nullptr;
  uint64_t* pt = pd ? Walk(pd, va, 21) : nullptr;
  return pt ? &pt[(va >> 12) & 511] : nullptr;
}

Arena CpaArena() { return g_cpa_arena; }

void FlushTlb() { cpu::WriteCr3(cpu::ReadCr3()); }

}  // namespace guest
