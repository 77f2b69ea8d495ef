// The fuzz layer over testing::FakeVm (tests/common/fake_vm.h): guest RAM
// and GDT sizes and the RAM fill picked by the input, the GDT laid out as the
// VMM lays it out, a bounded console, the argument and number generators, and
// the invariants that every hypercall must keep whatever the guest passes
// (docs/design.md "Hypercalls").
#ifndef MINIVMM_FUZZ_COMMON_FUZZ_VM_H_
#define MINIVMM_FUZZ_COMMON_FUZZ_VM_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/input.h"
#include "hypercalls/descriptor.h"
#include "hypercalls/dispatcher.h"
#include "minivmm/hypercall_env.h"
#include "minivmm_abi/boot.h"
#include "minivmm_abi/hypercall.h"
#include "tests/common/descriptors.h"
#include "tests/common/fake_vm.h"

namespace minivmm::fuzz {

using testing::kUserTlsDesc;

inline constexpr uint32_t kUserHypercall = MVMM_HC_USER_FIRST;
inline constexpr uint64_t kInitialCr0 = 0x80050033;  // PE|MP|ET|NE|WP|PG
inline constexpr uint64_t kInitialRflags = 0x2;
inline constexpr uint64_t kInitialCr3 = MVMM_PAGE_TABLES_GPA;

// The embedder-style hypercall registered at kUserHypercall: returns args[0]
// when args[1] == 0 (so values above INT64_MAX reach the dispatcher's clamp),
// else an error with status code args[1] % 20 (so GuestErrno sees every code).
inline absl::StatusOr<uint64_t> UserHypercall(HypercallEnv&, const HypercallArgs& a) {
  if (a[1] == 0) return a[0];
  const auto code = static_cast<absl::StatusCode>(a[1] % 20);
  if (code == absl::StatusCode::kOk) return uint64_t{0};
  return absl::Status(code, "fuzz");
}

struct FuzzVm : testing::FakeVm {
  // Picks RAM and GDT sizes and the RAM fill from the input's first bytes.
  explicit FuzzVm(Input& in) : FakeVm(/*ram_size=*/0, /*gdt_size=*/0) {
    switch (in.U8() % 8) {
      case 0:
      case 1:
        UseRamOfSize(0x4000);
        break;  // boot info, command line, TSS; no page tables
      case 2:
        UseRamOfSize(0x12000);
        break;  // also the PML4 and PDPT pages
      case 3:
        UseRamOfSize(0);
        break;
      case 4:
        UseRamOfSize(0x1000);
        break;  // the TSS is outside RAM
      case 5:
        UseRamOfSize(MVMM_TSS_GPA + sizeof(mvmm_tss));
        break;  // ends right after the TSS
      case 6:
        UseRamOfSize(MVMM_PAGE_TABLES_END);
        break;
      default:
        UseRamOfSize((in.U16() % 0x9000 + 1) * 2);
        break;  // odd page fraction
    }
    const uint8_t fill = in.U8();
    std::fill(ram.begin(), ram.end(), fill);
    const uint8_t g = in.U8();
    if (g % 8 < 5) {
      ResizeGdt(testing::kGdtPageSize);
    } else if (g % 8 == 5) {
      ResizeGdt(0);
    } else if (g % 8 == 6) {
      ResizeGdt(MVMM_GDT_ENTRIES * 8);
    } else {
      ResizeGdt(in.U8() * 8 + g / 8 % 8);  // short or misaligned table ends
    }
    LayOutGdtAsVmm();
    initial_gdt = gdt;
    vcpu.cr0 = kInitialCr0;
    vcpu.cr3 = kInitialCr3;
    vcpu.regs[static_cast<int>(Reg::kRflags)] = kInitialRflags;
    console.keep_last = MVMM_CONSOLEIO_MAX_BYTES;  // enough for the last write
    timer.now = 1000;
    // The other vCPUs the IPI hypercalls see: how many, which one calls,
    // which are blocked, which registered a run-state area and where (often
    // a good one, sometimes anything the fake directory could hold).
    cpus.cpus = in.U8() % MVMM_MAX_CPUS + 1;
    exit.vcpu_id = in.U8() % cpus.cpus;
    const uint32_t blocked = in.U32();
    const uint32_t registered = in.U32();
    for (uint32_t cpu = 0; cpu < cpus.cpus; ++cpu) {
      cpus.blocked[cpu] = (blocked >> cpu & 1) != 0;
      if ((registered >> cpu & 1) == 0) continue;
      const uint8_t where = in.U8();
      cpus.runstate[cpu] = where % 4 != 0 ? uint64_t{0x4000} + 8 * cpu : Arg(in);
    }
    if (!dispatcher.Register(kUserHypercall, "fuzz_user", UserHypercall).ok()) std::abort();
  }

  std::vector<uint8_t> initial_gdt;

  uint64_t ram_size() const { return ram.size(); }

  // Points RAM at an exact-size heap buffer. The common sizes are cached
  // across inputs: fresh 128 KiB allocations per input would cost more than
  // the code under test (ASan quarantine, page faults).
  void UseRamOfSize(uint64_t size) {
    static auto* cache = new std::map<uint64_t, std::unique_ptr<uint8_t[]>>;
    const bool common = size % 0x1000 == 0 || size == MVMM_TSS_GPA + sizeof(mvmm_tss);
    if (size == 0 || !common) {
      ResizeRam(size);
      return;
    }
    std::unique_ptr<uint8_t[]>& slot = (*cache)[size];
    if (!slot) slot = std::make_unique<uint8_t[]>(size);
    FakeVm::UseRam(std::span<uint8_t>(slot.get(), size));
  }

  // A guest argument: mostly values near the edges that matter.
  uint64_t Arg(Input& in, uint64_t anchor = 0) {
    switch (in.U8() % 21) {
      case 0:
        return in.U64();
      case 1:
        return in.U8();
      case 2:
        return ram_size() - in.U16();  // at / below the end of RAM
      case 3:
        return ram_size() + in.U8();  // just past RAM
      case 4:
        return MVMM_GDT_GPA + in.U16() % 0x1010;  // the GDT page and past it
      case 5:
        return testing::TlsSlotGpa(in.U8() % 4, in.U8() % (MVMM_MAX_CPUS + 1));  // any vCPU's, or past the last
      case 6:
        return MVMM_PAGE_TABLES_GPA + in.U16() % 0x10000;
      case 7:
        return MVMM_TSS_GPA + in.U8();
      case 8:
        return ~uint64_t{0} - in.U16();  // wraps with any length
      case 9:
        return in.U32();
      case 10:
        return anchor + in.U16();  // relative to a list
      case 11:
        return kUserTlsDesc ^ (uint64_t{1} << (in.U8() % 64));
      case 12:
        return (uint64_t{in.U32()} << 12 & 0x000FFFFFFFFFF000ull) | in.U8();  // a PTE
      case 13:
        return uint64_t{1} << (in.U8() % 64);
      case 14:
        return 0;
      case 15:
        return 1;
      case 16:
        return MVMM_SEL_KERNEL_DS;
      case 17:
        return 0xFFFF800000000000ull + in.U16();  // canonical high half
      case 18:
        return kInitialCr0 ^ (uint64_t{1} << (in.U8() % 64));
      case 19:
        return ram_size() / 4096 - in.U8();  // a frame number near the end of RAM
      default:
        return MVMM_BOOT_INFO_GPA + in.U16();
    }
  }

  // A hypercall number: mostly real ones, sometimes anything.
  uint64_t Number(Input& in) {
    static constexpr uint64_t kKnown[] = {
        1, 3, 5,  10, 13,  15, 17, 18, 24, 26, 29, 40, 41, 42, 43, 44, 45, 46, kUserHypercall,
        0, 2, 63, 65, 127, 128};
    const uint8_t b = in.U8();
    if (b % 8 == 7) return in.U64();  // EAX truncation, huge numbers
    return kKnown[b / 8 % (sizeof(kKnown) / sizeof(kKnown[0]))];
  }

  // Copies input bytes into RAM at an offset the input picks (never fails).
  void Poke(Input& in) {
    const uint32_t at = in.U32();
    const std::span<const uint8_t> bytes = in.Bytes(in.U8());
    if (ram.empty()) return;
    const uint64_t start = at % ram.size();
    const uint64_t n = std::min<uint64_t>(bytes.size(), ram.size() - start);
    if (n > 0) std::memcpy(ram.data() + start, bytes.data(), n);
  }
};

inline bool IsValidResult(int64_t r) {
  if (r >= 0) return true;
  switch (-r) {
    case MVMM_EPERM:
    case MVMM_ENOENT:
    case MVMM_E2BIG:
    case MVMM_EFAULT:
    case MVMM_EINVAL:
    case MVMM_ENOSYS:
      return true;
    default:
      return false;
  }
}

// Everything a hypercall can change, for before/after comparisons. Take()
// reuses its buffers, so one Snapshot per input costs no allocation per call.
struct Snapshot {
  void Take(const FuzzVm& vm) {
    ram.assign(vm.ram.begin(), vm.ram.end());
    gdt.assign(vm.gdt.begin(), vm.gdt.end());
    cr0 = vm.vcpu.cr0;
    cr3 = vm.vcpu.cr3;
    rflags = vm.vcpu.regs[static_cast<int>(Reg::kRflags)];
    console_total = vm.console.total;
    report_entries = vm.reports.entries.size();
    report_bytes = vm.reports.bytes;
    request = vm.control.request;
    exit_code = vm.control.exit_code;
    timer_sets = vm.timer.armed.size() + vm.timer.periods.size();
    vcpu_info_gpa = vm.control.vcpu_info_gpa;
    ipis_sent = vm.cpus.sent.size();
    kicks_sent = vm.cpus.kicks.size();
  }

  bool Same(const FuzzVm& vm) const {
    return std::equal(ram.begin(), ram.end(), vm.ram.begin(), vm.ram.end()) && gdt == vm.gdt &&
           cr0 == vm.vcpu.cr0 && cr3 == vm.vcpu.cr3 &&
           rflags == vm.vcpu.regs[static_cast<int>(Reg::kRflags)] &&
           console_total == vm.console.total && report_entries == vm.reports.entries.size() &&
           report_bytes == vm.reports.bytes && request == vm.control.request &&
           exit_code == vm.control.exit_code &&
           timer_sets == vm.timer.armed.size() + vm.timer.periods.size() &&
           vcpu_info_gpa == vm.control.vcpu_info_gpa && ipis_sent == vm.cpus.sent.size() &&
           kicks_sent == vm.cpus.kicks.size();
  }

  std::vector<uint8_t> ram, gdt;
  uint64_t cr0 = 0, cr3 = 0, rflags = 0, console_total = 0;
  size_t report_entries = 0, report_bytes = 0;
  VcpuRequest request = VcpuRequest::kNone;
  int exit_code = 0;
  uint64_t timer_sets = 0;
  std::optional<uint64_t> vcpu_info_gpa;
  size_t ipis_sent = 0;
  size_t kicks_sent = 0;
};

// Invariants that hold after any sequence of hypercalls.
inline void CheckGlobalInvariants(const FuzzVm& vm) {
  // The GDT: only the TLS slots of the VM's vCPUs (one MVMM_GDT_STRIDE
  // per vCPU) may differ from what the VMM wrote, and a TLS slot only ever
  // holds an accepted descriptor with its accessed bit set.
  FUZZ_CHECK(vm.gdt.size() == vm.initial_gdt.size());
  for (size_t at = 0; at < vm.gdt.size(); at += 8) {
    const size_t n = std::min<size_t>(8, vm.gdt.size() - at);
    const bool tls = n == 8 && at / MVMM_GDT_STRIDE < vm.cpus.count() &&
                     IsTlsSlot(static_cast<uint32_t>(at % MVMM_GDT_STRIDE / 8));
    if (!tls) {
      FUZZ_CHECK(std::memcmp(vm.gdt.data() + at, vm.initial_gdt.data() + at, n) == 0);
      continue;
    }
    uint64_t desc;
    std::memcpy(&desc, vm.gdt.data() + at, 8);
    FUZZ_CHECK(CheckTlsDescriptor(desc) == DescriptorVerdict::kOk);
    FUZZ_CHECK(desc == 0 || (desc & MVMM_DESC_ACCESSED) != 0);
  }
  // A registered vcpu_info is aligned and wholly inside RAM.
  if (vm.control.vcpu_info_gpa.has_value()) {
    const uint64_t gpa = *vm.control.vcpu_info_gpa;
    FUZZ_CHECK(gpa % MVMM_VCPU_INFO_ALIGN == 0);
    FUZZ_CHECK(gpa <= vm.ram.size() && sizeof(mvmm_vcpu_info) <= vm.ram.size() - gpa);
  }
  // CR0: only MP, EM, TS are the guest's. RFLAGS: only IF.
  FUZZ_CHECK(((vm.vcpu.cr0 ^ kInitialCr0) & ~MVMM_CR0_GUEST_WRITABLE) == 0);
  FUZZ_CHECK(((vm.vcpu.regs[static_cast<int>(Reg::kRflags)] ^ kInitialRflags) & ~MVMM_RFLAGS_IF) ==
             0);
  // CR3: the boot tables, or a page of RAM at or above them (mmuext_op).
  FUZZ_CHECK(vm.vcpu.cr3 == kInitialCr3 ||
             (vm.vcpu.cr3 % 4096 == 0 && vm.vcpu.cr3 >= MVMM_PAGE_TABLES_GPA &&
              vm.vcpu.cr3 < vm.ram_size()));
  // Reports are bounded and their byte count is exact.
  FUZZ_CHECK(vm.reports.bytes <= GuestReports::kMaxBytes);
  size_t bytes = 0;
  for (const auto& [k, v] : vm.reports.entries)
    bytes += k.size() + v.size() + GuestReports::kEntryOverheadBytes;
  FUZZ_CHECK(bytes == vm.reports.bytes);
  if (vm.control.request == VcpuRequest::kShutdown) {
    FUZZ_CHECK(vm.control.exit_code >= 0 && vm.control.exit_code <= 255);
  }
  // IPIs only ever go to vCPUs the VM has (the fake aborts otherwise).
  for (const testing::FakeCpus::Ipi& ipi : vm.cpus.sent) {
    FUZZ_CHECK(ipi.to < vm.cpus.cpus && ipi.from == vm.exit.vcpu_id);
  }
  // Kicks go to another vCPU the VM has, never the caller (the fake aborts
  // otherwise). lock_wait is never left pending as a multicall entry.
  for (const testing::FakeCpus::Ipi& kick : vm.cpus.kicks) {
    FUZZ_CHECK(kick.to < vm.cpus.cpus && kick.to != kick.from && kick.from == vm.exit.vcpu_id);
  }
}

}  // namespace minivmm::fuzz

#endif  // MINIVMM_FUZZ_COMMON_FUZZ_VM_H_
