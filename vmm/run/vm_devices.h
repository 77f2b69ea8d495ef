// The two devices every VM has besides the UART and debug-exit port: the
// hypercall port and the trap on the read-only GDT page.
#ifndef MINIVMM_VMM_RUN_VM_DEVICES_H_
#define MINIVMM_VMM_RUN_VM_DEVICES_H_

#include <array>
#include <span>
#include <string>
#include <vector>

#include "hypercalls/dispatcher.h"
#include "hypercalls/gdt_store.h"
#include "hypercalls/hypercall_env.h"
#include "vmm/core/io_device.h"

namespace minivmm {

// Port MVMM_HYPERCALL_PORT: a 4-byte `out` is one hypercall (docs/design.md "Hypercalls");
// anything else there is ignored (reads return all ones).
class HypercallPort final : public IoDevice {
 public:
  HypercallPort(const Dispatcher& dispatcher, const GuestMemory& memory, std::span<uint8_t> gdt,
                ConsoleSink* console, TimerControl* timer, GuestReports* reports)
      : dispatcher_(dispatcher),
        memory_(memory),
        gdt_(gdt),
        console_(console),
        timer_(timer),
        reports_(reports) {}

  std::string_view Name() const override { return "hypercall"; }
  void Read(uint64_t, std::span<uint8_t> data, ExitContext&) override {
    for (auto& b : data) b = 0xff;
  }
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override {
    if (offset != 0 || data.size() != 4) return;
    HypercallEnv env{memory_, gdt_, ctx, console_, timer_, reports_};
    last_result_ = dispatcher_.HandleExit(env);
  }
  int64_t last_result() const { return last_result_; }

 private:
  const Dispatcher& dispatcher_;
  const GuestMemory& memory_;
  std::span<uint8_t> gdt_;
  ConsoleSink* console_;
  TimerControl* timer_;
  GuestReports* reports_;
  int64_t last_result_ = 0;
};

// The GDT page (MVMM_GDT_GPA, read-only memslot): reads never exit (KVM
// serves them from the slot); each store exits here and goes through the
// same validator as update_descriptor.
class GdtTrap final : public IoDevice {
 public:
  explicit GdtTrap(std::span<uint8_t> gdt) : gdt_(gdt) {}

  std::string_view Name() const override { return "gdt"; }
  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext&) override {
    for (size_t i = 0; i < data.size(); ++i)
      data[i] = offset + i < gdt_.size() ? gdt_[offset + i] : 0xff;
  }
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override {
    GdtStoreResult result = ApplyGdtStore(gdt_, offset, data);
    CountTrappedGdtStore(ctx.stats, result);
    if (!result.applied()) {
      auto& seen = logged_[static_cast<int>(result.kind)];
      if (!seen) {
        seen = true;
        notes_.push_back("guest store into the GDT at offset " + std::to_string(offset) +
                         " dropped: " + std::string(GdtStoreKindName(result.kind)) +
                         " (logged once per kind)");
      }
    }
  }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  std::span<uint8_t> gdt_;
  std::array<bool, static_cast<int>(GdtStoreKind::kCount)> logged_{};
  std::vector<std::string> notes_;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_RUN_VM_DEVICES_H_
