// The one fake VM of the unit tests, the device tests and the fuzzers: guest
// RAM in an exact-size heap buffer, a GDT page, PlainVcpuState, run control,
// counters, a recording console and timer, guest reports, a directory of
// fake vCPUs, a Dispatcher and the HypercallEnv over all of them. No /dev/kvm, no gtest: misuse of
// the fake (a poke outside its RAM) aborts with a message; checks belong to the caller (gtest in
// tests/, FUZZ_CHECK in fuzz/).
#ifndef MINIVMM_TESTS_COMMON_FAKE_VM_H_
#define MINIVMM_TESTS_COMMON_FAKE_VM_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hypercalls/dispatcher.h"
#include "minivmm/exit_context.h"
#include "minivmm/guest_memory.h"
#include "minivmm/hypercall_env.h"
#include "minivmm/sinks.h"
#include "minivmm/vcpu_directory.h"
#include "minivmm_abi/boot.h"
#include "vmm/boot/boot_layout.h"

namespace minivmm::testing {

// Records what the guest printed: every byte by default; with `keep_last`
// set, only the last `keep_last` bytes (a fuzzer's bound, so that a long
// input cannot grow memory). `total` and `writes` count everything.
class RecordingConsole final : public ConsoleSink {
 public:
  void Write(std::string_view bytes) override {
    ++writes;
    total += bytes.size();
    if (bytes.size() >= keep_last) {
      out.assign(bytes.substr(bytes.size() - keep_last));
      return;
    }
    const size_t room = keep_last - bytes.size();
    if (out.size() > room) out.erase(0, out.size() - room);
    out.append(bytes);
  }
  std::string out;
  size_t keep_last = std::numeric_limits<size_t>::max();
  uint64_t total = 0;
  uint64_t writes = 0;
};

// A clock that stands still at `now` and records every one-shot deadline
// armed (and by which vCPU) and every periodic timer set, for `cpus` vCPUs.
class RecordingTimer final : public TimerControl {
 public:
  struct Period {
    uint32_t vcpu;
    uint64_t period_ns;  // 0: stopped
    bool operator==(const Period&) const = default;
  };
  uint64_t NowNs() const override { return now; }
  bool SetVcpuOneShot(uint32_t vcpu, uint64_t deadline_ns) override {
    if (vcpu >= cpus) return false;
    armed.push_back(deadline_ns);
    armed_by.push_back(vcpu);
    return true;
  }
  bool SetPeriodic(uint32_t vcpu, uint64_t period_ns) override {
    if (vcpu >= cpus) return false;
    periods.push_back({vcpu, period_ns});
    return true;
  }
  uint64_t now = 0;
  uint32_t cpus = MVMM_MAX_CPUS;
  std::vector<uint64_t> armed;
  std::vector<uint32_t> armed_by;
  std::vector<Period> periods;
};

// The other vCPUs as the IPI hypercalls see them: `cpus` of them (1 by
// default), each blocked or not and with or without a run-state area as the
// test sets, and every IPI sent recorded in order.
class FakeCpus final : public VcpuDirectory {
 public:
  struct Ipi {
    uint32_t from;
    uint32_t to;
    bool operator==(const Ipi&) const = default;
  };
  uint32_t count() const override { return cpus; }
  std::optional<uint64_t> RunstateGpa(uint32_t cpu) const override { return runstate.at(cpu); }
  bool Blocked(uint32_t cpu) const override { return blocked.at(cpu); }
  void SendIpi(uint32_t from, uint32_t cpu) override {
    if (cpu >= cpus) {
      std::fprintf(stderr, "FakeCpus: an IPI to vCPU %u of %u\n", cpu, cpus);
      std::abort();
    }
    sent.push_back({from, cpu});
  }
  void LockKick(uint32_t from, uint32_t cpu) override {
    if (cpu >= cpus || cpu == from) {
      std::fprintf(stderr, "FakeCpus: a kick from vCPU %u to vCPU %u of %u\n", from, cpu, cpus);
      std::abort();
    }
    kicks.push_back({from, cpu});
  }

  uint32_t cpus = 1;
  std::array<std::optional<uint64_t>, MVMM_MAX_CPUS> runstate{};
  std::array<bool, MVMM_MAX_CPUS> blocked{};
  std::vector<Ipi> sent;
  std::vector<Ipi> kicks;  // lock_kick: from, to
};

inline constexpr uint64_t kRamSize = 1 << 20;  // FakeVm's default
inline constexpr size_t kGdtPageSize = 4096;

// Not copyable or movable: `memory`, `exit` and `env` point into the object.
struct FakeVm {
  explicit FakeVm(uint64_t ram_size = kRamSize, size_t gdt_size = kGdtPageSize) {
    ResizeRam(ram_size);
    ResizeGdt(gdt_size);
  }

  std::span<uint8_t> ram;  // exactly ram_size bytes on the heap: ASan sees any overrun
  GuestMemory memory{std::span<uint8_t>()};
  std::vector<uint8_t> gdt;  // exactly gdt_size bytes, zeroed
  PlainVcpuState vcpu;
  RunControl control;
  ExitStats stats;
  ExitContext exit{vcpu, control, stats};
  RecordingConsole console;
  RecordingTimer timer;
  GuestReports reports;
  FakeCpus cpus;
  Dispatcher dispatcher;
  HypercallEnv env{memory, gdt, exit, &console, &timer, &reports, &cpus};

  // A fresh zeroed RAM of exactly `size` bytes (none for 0).
  void ResizeRam(uint64_t size) {
    owned_ram_ = size == 0 ? nullptr : std::make_unique<uint8_t[]>(size);
    ram = std::span<uint8_t>(owned_ram_.get(), size);
    memory = GuestMemory(ram);
  }
  // RAM is `buffer`, which the caller owns and keeps alive (a fuzzer reuses
  // exact-size buffers across inputs); its contents are left as they are.
  void UseRam(std::span<uint8_t> buffer) {
    owned_ram_.reset();
    ram = buffer;
    memory = GuestMemory(ram);
  }
  // A zeroed GDT of exactly `bytes` bytes (a short, misaligned or empty
  // table as well as a page).
  void ResizeGdt(size_t bytes) {
    std::vector<uint8_t>(bytes).swap(gdt);
    env.gdt = gdt;
  }
  // The GDT as the VMM writes it at boot for `cpus.cpus` vCPUs
  // (WriteInitialGdt: one block per vCPU, entries 0-6, TLS slots empty), cut
  // to the fake's GDT size. Needs vmm/boot/boot_layout.cc linked in.
  void LayOutGdtAsVmm() {
    if (gdt.size() == kGdtPageSize) {
      WriteInitialGdt(gdt, cpus.cpus);
      return;
    }
    std::array<uint8_t, kGdtPageSize> page;
    WriteInitialGdt(page, cpus.cpus);
    if (gdt.empty()) return;
    std::memcpy(gdt.data(), page.data(), std::min(gdt.size(), page.size()));
    if (gdt.size() > page.size())
      std::memset(gdt.data() + page.size(), 0, gdt.size() - page.size());
  }

  // One direct hypercall as the run loop makes it, minus the registers.
  HypercallResult Result(uint64_t nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0,
                         uint64_t a3 = 0, uint64_t a4 = 0) {
    return dispatcher.Dispatch(env, nr, HypercallArgs{a0, a1, a2, a3, a4}, /*direct=*/true);
  }
  // The same, just the value the guest gets in RAX (>= 0 or -errno).
  int64_t Call(uint64_t nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0,
               uint64_t a4 = 0) {
    return Result(nr, a0, a1, a2, a3, a4).value;
  }
  // Loads a hypercall into the registers the ABI names (RAX, then RDI, RSI,
  // RDX, R10, R8), as the guest would before its `out`.
  void SetHypercallRegs(uint64_t rax, const HypercallArgs& a) {
    vcpu.Set(Reg::kRax, rax);
    vcpu.Set(Reg::kRdi, a[0]);
    vcpu.Set(Reg::kRsi, a[1]);
    vcpu.Set(Reg::kRdx, a[2]);
    vcpu.Set(Reg::kR10, a[3]);
    vcpu.Set(Reg::kR8, a[4]);
  }
  // Whether `result` keeps the contract of HypercallResult: a refusal reason
  // exactly when the call was refused.
  static bool RefusalMatches(const HypercallResult& result) {
    return (result.refusal != nullptr) == !result.ok();
  }

  // Guest RAM and GDT access for setting up and checking; abort when the
  // range is not wholly inside the fake (a bug in the test).
  void Poke64(uint64_t gpa, uint64_t value) { std::memcpy(Inside(ram, gpa, 8), &value, 8); }
  uint64_t Peek64(uint64_t gpa) const {
    uint64_t value;
    std::memcpy(&value, Inside(ram, gpa, 8), 8);
    return value;
  }
  void PokeBytes(uint64_t gpa, std::string_view bytes) {
    uint8_t* at = Inside(ram, gpa, bytes.size());
    if (!bytes.empty()) std::memcpy(at, bytes.data(), bytes.size());
  }
  uint64_t GdtSlot(int slot) const {
    uint64_t value;
    std::memcpy(&value, Inside(std::span<const uint8_t>(gdt), 8 * static_cast<uint64_t>(slot), 8),
                8);
    return value;
  }

  const CauseCount& cause(Cause c) const { return stats.causes[static_cast<int>(c)]; }

 private:
  // &area[offset], once [offset, offset + len) is known to lie inside `area`.
  template <typename T>
  static T* Inside(std::span<T> area, uint64_t offset, uint64_t len) {
    if (offset > area.size() || len > area.size() - offset) {
      std::fprintf(stderr, "FakeVm: [%#llx, +%llu) is outside the fake's %zu bytes\n",
                   static_cast<unsigned long long>(offset), static_cast<unsigned long long>(len),
                   area.size());
      std::abort();
    }
    return area.data() + offset;
  }

  std::unique_ptr<uint8_t[]> owned_ram_;
};

}  // namespace minivmm::testing

#endif  // MINIVMM_TESTS_COMMON_FAKE_VM_H_
