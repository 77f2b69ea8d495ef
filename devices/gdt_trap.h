// The GDT page (MVMM_GDT_GPA, a read-only memslot) as a device: reads never
// exit (KVM serves them from the slot), each guest store exits here and goes
// through the validator update_descriptor uses (hypercalls/gdt_store.h), so a
// trapped store and a hypercall can change the GDT in exactly the same ways.
#ifndef MINIVMM_DEVICES_GDT_TRAP_H_
#define MINIVMM_DEVICES_GDT_TRAP_H_

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hypercalls/gdt_store.h"
#include "minivmm/io_device.h"

namespace minivmm {

class GdtTrap final : public IoDevice {
 public:
  // `gdt` is the host view of the GDT page; it must outlive the trap. `cpus`
  // is the VM's vCPU count: stores into the GDT of a vCPU it lacks are dropped.
  GdtTrap(std::span<uint8_t> gdt, uint32_t cpus) : gdt_(gdt), cpus_(cpus) {}

  std::string_view Name() const override { return "gdt"; }
  // Only reached when KVM emulates an access (reads normally do not exit).
  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
  // Applies a valid store, drops an invalid one; counted in gdt_stores_*.
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

  // One line per kind of dropped store, the first time it happens.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  std::span<uint8_t> gdt_;
  uint32_t cpus_;
  std::array<bool, static_cast<int>(GdtStoreKind::kCount)> logged_{};
  std::vector<std::string> notes_;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_GDT_TRAP_H_
