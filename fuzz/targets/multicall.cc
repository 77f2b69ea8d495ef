// Fuzzes multicall: random entry lists placed anywhere (inside RAM, across
// its end, over the TSS or the page tables, at the GDT, near 2^64), with
// entries whose arguments point into the list itself, the GDT or the page
// tables, counts around the list length and the 512 limit, and nested
// multicalls.
//
// Input: FuzzVm header, then
//   u8 placement, u16 (placement operand), u16 entry count n (% 600),
//   u8 count mode, n entries of (op = FuzzVm::Number, 6 x FuzzVm::Arg with the
//   list address as anchor), then pokes (u32 offset, u8 len, bytes) to the end.
// Invariants: the multicall returns 0, -E2BIG (count > 512) or -EFAULT (list
// not wholly in RAM) and nothing else; a refused list changes nothing; an
// accepted one runs exactly `count` entries (counters) and, unless an entry
// legitimately writes guest RAM (mmu_update, stack_switch), writes nothing in
// RAM but the entries' result fields, each a valid result.
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "common/fuzz_vm.h"

namespace minivmm::fuzz {
namespace {

constexpr uint64_t kEntry = sizeof(mvmm_multicall_entry);

uint64_t Placement(FuzzVm& vm, Input& in) {
  const uint8_t p = in.U8();
  const uint16_t k = in.U16();
  switch (p % 8) {
    case 0:
      return vm.ram_size() > 0 ? k % vm.ram_size() & ~uint64_t{7} : 0;
    case 1:
      return vm.ram_size() > 0 ? k % vm.ram_size() : 0;  // misaligned is allowed
    case 2:
      return vm.ram_size() - k % 0x800;  // crosses the end of RAM
    case 3:
      return MVMM_PAGE_TABLES_GPA + k % 0x1000;  // over the page tables
    case 4:
      return MVMM_TSS_GPA - k % 0x100;  // over the TSS
    case 5:
      return MVMM_GDT_GPA + k % 0x80;  // the GDT: outside RAM
    case 6:
      return ~uint64_t{0} - k;  // wraps
    default:
      return in.U64();
  }
}

uint64_t Count(uint64_t n, Input& in) {
  switch (in.U8() % 8) {
    case 0:
      return n + 1;  // one more than written
    case 1:
      return n > 0 ? n - 1 : 0;
    case 2:
      return 0;
    case 3:
      return MVMM_MULTICALL_MAX_ENTRIES + in.U8() % 2;  // at / past the limit
    case 4:
      return in.U64();
    default:
      return n;
  }
}

// Entries whose handlers store into guest RAM besides their result field:
// PTEs, the TSS's rsp0, the vcpu_info's pending byte or the run-state area on
// registration, other vCPUs' run-state flags (flush_tlb_others).
bool WritesRam(uint64_t op) {
  return op == MVMM_HC_mmu_update || op == MVMM_HC_stack_switch || op == MVMM_HC_vcpu_op ||
         op == MVMM_HC_flush_tlb_others;
}

void Run(Input& in) {
  FuzzVm vm(in);
  HypercallEnv& env = vm.env;
  const uint64_t list = Placement(vm, in);
  const uint64_t n = in.U16() % 600;
  const uint64_t count = Count(n, in);

  // Write the entries where the list is, as far as that lies in RAM.
  bool writes_ram = false;  // an entry that may legitimately store into RAM
  for (uint64_t i = 0; i < n && !in.empty(); ++i) {
    mvmm_multicall_entry e{};
    e.op = vm.Number(in);
    e.result = in.U8() % 2 ? 0 : 0xDEADBEEF;
    for (uint64_t& a : e.args) a = vm.Arg(in, list);
    if (WritesRam(e.op)) writes_ram = true;
    const auto bytes = std::bit_cast<std::array<uint8_t, kEntry>>(e);
    for (uint64_t b = 0; b < kEntry; ++b) {
      const uint64_t gpa = list + i * kEntry + b;
      if (gpa < vm.ram.size()) vm.ram[gpa] = bytes[b];
    }
  }
  while (!in.empty()) vm.Poke(in);

  // What runs is what the list holds now; note the ops for the checks.
  const bool in_ram =
      count <= MVMM_MULTICALL_MAX_ENTRIES && vm.memory.Contains(GuestAddress(list), count * kEntry);
  if (in_ram) {
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t op;
      // Safety: in_ram: the whole list [list, list + count * kEntry) is inside vm.ram.
      std::memcpy(&op, vm.ram.data() + list + i * kEntry, 8);
      if (WritesRam(op)) writes_ram = true;
    }
  }

  static auto* snapshot = new Snapshot;
  Snapshot& before = *snapshot;
  before.Take(vm);
  const uint64_t ops_before = vm.stats.causes[static_cast<int>(Cause::kMulticall)].ops;
  vm.vcpu.Set(Reg::kRax, MVMM_HC_multicall);
  vm.vcpu.Set(Reg::kRdi, list);
  vm.vcpu.Set(Reg::kRsi, count);
  const int64_t r = vm.dispatcher.HandleExit(env);

  if (count > MVMM_MULTICALL_MAX_ENTRIES) {
    FUZZ_CHECK(r == -MVMM_E2BIG);
  } else if (count == 0) {
    FUZZ_CHECK(r == 0);
  } else if (!in_ram) {
    FUZZ_CHECK(r == -MVMM_EFAULT);
  } else {
    FUZZ_CHECK(r == 0);
  }
  if (r < 0) FUZZ_CHECK(before.Same(vm));
  if (r == 0) {
    FUZZ_CHECK(vm.stats.causes[static_cast<int>(Cause::kMulticall)].ops == ops_before + count);
  }
  if (r == 0 && count > 0 && !writes_ram) {
    // Only result fields changed in RAM: copy them into the snapshot, then
    // the two must be equal.
    static auto* expect = new std::vector<uint8_t>;
    expect->assign(before.ram.begin(), before.ram.end());
    for (uint64_t i = 0; i < count; ++i) {
      // Safety: an accepted list lies inside RAM, and `expect` is a same-size copy of it.
      std::memcpy(expect->data() + list + i * kEntry + 8, vm.ram.data() + list + i * kEntry + 8, 8);
    }
    FUZZ_CHECK(std::equal(expect->begin(), expect->end(), vm.ram.begin(), vm.ram.end()));
    for (uint64_t i = 0; i < count; ++i) {
      int64_t result;
      // Safety: an accepted list lies inside RAM; the result field is 8 bytes of entry i.
      std::memcpy(&result, vm.ram.data() + list + i * kEntry + 8, 8);
      FUZZ_CHECK(IsValidResult(result));
    }
  }
  CheckGlobalInvariants(vm);

  // The same list as an entry of another multicall is refused.
  const HypercallResult nested =
      vm.dispatcher.Dispatch(env, MVMM_HC_multicall, HypercallArgs{list, count}, /*direct=*/false);
  FUZZ_CHECK(nested.value == -MVMM_EINVAL && nested.refusal != nullptr);
}

}  // namespace
}  // namespace minivmm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  minivmm::fuzz::Input in(data, size);
  minivmm::fuzz::Run(in);
  return 0;
}
