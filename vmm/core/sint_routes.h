// The seam between a device that raises Hyper-V synthetic interrupts and
// KVM's SynIC, as devices/irq_lines.h is for ISA lines: the device asks for
// a route to SINT `sint` of the vCPU with VP index `vp_index`, raises it,
// and may be told when the guest acknowledges it; the machine implements it
// with KVM's GSI routes of type KVM_IRQ_ROUTING_HV_SINT
// (vmm/kvm/sint_routes.h). A device never sees KVM (docs/design.md), so it
// gets a SintRoutes*.
#ifndef MINIVMM_VMM_CORE_SINT_ROUTES_H_
#define MINIVMM_VMM_CORE_SINT_ROUTES_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace minivmm {

class SintRoutes {
 public:
  virtual ~SintRoutes() = default;

  // A new route, named by the number returned. `on_ack`, if not empty, is
  // called on a thread of the machine's own each time the guest acknowledges
  // that SINT (an EOI of its vector, or a write of the EOM MSR, which
  // acknowledges every SINT of the vCPU); an acknowledgement that comes as
  // the route goes may still call it once after Remove. ResourceExhausted
  // when the machine has no room for another.
  virtual absl::StatusOr<uint32_t> Add(uint32_t vp_index, uint32_t sint,
                                       std::function<void()> on_ack) = 0;
  // Raises the SINT once: KVM sets it pending in the vCPU's SynIC, which
  // delivers the SINT's vector unless the guest masked it.
  virtual absl::Status Raise(uint32_t route) = 0;
  virtual absl::Status Remove(uint32_t route) = 0;
};

// Event connections served in the kernel: KVM answers the guest's
// HvSignalEvent for the connection itself, with no exit to the VMM, and
// tells the VMM, which sets the event flag (as QEMU has KVM do with
// KVM_HYPERV_EVENTFD). Where KVM cannot, the machine has none of these and
// every HvSignalEvent reaches the VMM as a hypercall.
class HypervEventConnections {
 public:
  virtual ~HypervEventConnections() = default;
  // `on_signal` is called on the machine's thread after each HvSignalEvent
  // for connection `id`; one that comes as the connection goes may still
  // call it once after Disconnect.
  virtual absl::Status Connect(uint32_t id, std::function<void()> on_signal) = 0;
  virtual absl::Status Disconnect(uint32_t id) = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_CORE_SINT_ROUTES_H_
