// Everything a hypercall handler may use. Handlers never see KVM objects:
// registers come through VcpuState (synced, no ioctl), memory through
// GuestMemory (checked copies), and the GDT page as a host span.
#ifndef MINIVMM_HYPERCALL_ENV_H_
#define MINIVMM_HYPERCALL_ENV_H_

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "minivmm/exit_context.h"
#include "minivmm/guest_memory.h"
#include "minivmm/sinks.h"
#include "minivmm/vcpu_directory.h"

namespace minivmm {

// RDI, RSI, RDX, R10, R8.
using HypercallArgs = std::array<uint64_t, MVMM_MAX_HYPERCALL_ARGS>;

// key=value records the guest handed over with `report`, in arrival order.
// Bounded: keys, values and a per-entry overhead never exceed kMaxBytes.
struct GuestReports {
  static constexpr size_t kMaxBytes = 1 << 20;
  static constexpr size_t kEntryOverheadBytes = 2 * sizeof(std::string) + 16;
  std::vector<std::pair<std::string, std::string>> entries;
  size_t bytes = 0;
  // Called with a record's first key once the record is stored (not for an
  // empty or refused one), on the reporting vCPU's thread; may be empty.
  std::function<void(std::string_view first_key)> on_record;
};

struct HypercallEnv {
  const GuestMemory& memory;
  std::span<uint8_t> gdt;           // host view of the read-only GDT page; may be empty in tests
  ExitContext& exit;                // vCPU registers, run control, counters
  ConsoleSink* console = nullptr;   // may be null: output is dropped
  TimerControl* timer = nullptr;    // may be null: set_timer_op gets -ENOSYS
  GuestReports* reports = nullptr;  // may be null: report gets -ENOSYS
  VcpuDirectory* cpus = nullptr;    // may be null: send_ipi, flush_tlb_others get -ENOSYS
};

}  // namespace minivmm

#endif  // MINIVMM_HYPERCALL_ENV_H_
