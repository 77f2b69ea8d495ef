// A fake VM for hypercall unit tests: RAM over a std::vector, a GDT page,
// PlainVcpuState, counters, and recording console/timer sinks. No /dev/kvm.
#ifndef MINIVMM_TESTS_HYPERCALLS_TEST_VM_H_
#define MINIVMM_TESTS_HYPERCALLS_TEST_VM_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "hypercalls/dispatcher.h"
#include "minivmm/hypercall_env.h"
#include "minivmm_abi/boot.h"

namespace minivmm::testing {

class RecordingConsole final : public ConsoleSink {
 public:
  void Write(std::string_view bytes) override {
    out.append(bytes);
    ++writes;
  }
  std::string out;
  int writes = 0;
};

class RecordingTimer final : public TimerControl {
 public:
  uint64_t NowNs() const override { return now; }
  void SetOneShot(uint64_t deadline_ns) override { armed.push_back(deadline_ns); }
  uint64_t now = 0;
  std::vector<uint64_t> armed;
};

inline constexpr uint64_t kRamSize = 1 << 20;
inline constexpr uint64_t kGdtPageSize = 4096;

struct TestVm {
  explicit TestVm(uint64_t ram_size = kRamSize) : ram(ram_size), memory(ram) {}

  std::vector<uint8_t> ram;
  std::vector<uint8_t> gdt = std::vector<uint8_t>(kGdtPageSize);
  GuestMemory memory;
  PlainVcpuState vcpu;
  RunControl control;
  ExitStats stats;
  ExitContext exit{vcpu, control, stats};
  RecordingConsole console;
  RecordingTimer timer;
  GuestReports reports;
  HypercallEnv env{memory, gdt, exit, &console, &timer, &reports};
  Dispatcher dispatcher;

  // One direct hypercall as the run loop would make it, minus the registers:
  // the whole result. Every call also checks the contract of
  // HypercallResult: a reason exactly when the call was refused.
  HypercallResult Result(uint64_t nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0,
                         uint64_t a3 = 0, uint64_t a4 = 0) {
    const HypercallResult result =
        dispatcher.Dispatch(env, nr, HypercallArgs{a0, a1, a2, a3, a4}, /*direct=*/true);
    EXPECT_EQ(result.refusal != nullptr, !result.ok())
        << "hypercall " << nr << " returned " << result.value << " with refusal "
        << (result.refusal != nullptr ? result.refusal : "(null)");
    return result;
  }
  // The same, just the value the guest gets in RAX (>= 0 or -errno).
  int64_t Call(uint64_t nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0,
               uint64_t a4 = 0) {
    return Result(nr, a0, a1, a2, a3, a4).value;
  }

  void Poke64(uint64_t gpa, uint64_t value) {
    // Safety: ram.at(gpa + 7) throws unless all 8 bytes are inside the fake RAM.
    std::memcpy(&ram.at(gpa + 7) - 7, &value, 8);
  }
  uint64_t Peek64(uint64_t gpa) const {
    uint64_t value;
    // Safety: ram.at(gpa + 7) throws unless all 8 bytes are inside the fake RAM.
    std::memcpy(&value, &ram.at(gpa + 7) - 7, 8);
    return value;
  }
  void PokeBytes(uint64_t gpa, std::string_view bytes) {
    ASSERT_LE(gpa + bytes.size(), ram.size());
    // Safety: the range was asserted inside the fake RAM just above.
    std::memcpy(ram.data() + gpa, bytes.data(), bytes.size());
  }
  uint64_t GdtSlot(int slot) const {
    uint64_t value;
    // Safety: gdt.at(8 * slot + 7) throws unless all 8 bytes are inside the fake GDT.
    std::memcpy(&value, &gdt.at(8 * slot + 7) - 7, 8);
    return value;
  }
  const CauseCount& cause(Cause c) const { return stats.causes[static_cast<int>(c)]; }
};

// Builds a legacy segment descriptor from its fields (Intel SDM 3.4.5).
struct DescFields {
  uint32_t base = 0;
  uint32_t limit = 0;  // 20 bits
  unsigned type = 0, s = 0, dpl = 0, p = 0, avl = 0, l = 0, db = 0, g = 0;
};
inline uint64_t MakeDesc(const DescFields& f) {
  return (uint64_t{f.limit} & 0xFFFF) | (uint64_t{f.base} & 0xFFFFFF) << 16 |
         uint64_t{f.type & 0xF} << 40 | uint64_t{f.s & 1} << 44 | uint64_t{f.dpl & 3} << 45 |
         uint64_t{f.p & 1} << 47 | (uint64_t{f.limit} >> 16 & 0xF) << 48 |
         uint64_t{f.avl & 1} << 52 | uint64_t{f.l & 1} << 53 | uint64_t{f.db & 1} << 54 |
         uint64_t{f.g & 1} << 55 | (uint64_t{f.base} >> 24) << 56;
}

// A typical Linux TLS descriptor: flat 4 GiB user data, DPL 3, read/write.
inline constexpr uint64_t kUserTlsDesc = 0x00CFF2000000FFFFull;

inline uint64_t TlsSlotGpa(int i) { return MVMM_GDT_GPA + 8 * (MVMM_GDT_TLS_FIRST + i); }

}  // namespace minivmm::testing

#endif  // MINIVMM_TESTS_HYPERCALLS_TEST_VM_H_
